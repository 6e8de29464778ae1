/**
 * Who is in the fleet, with regions and the deterministic leader of each. No I/O: the cluster feeds
 * it heartbeats, disconnects and the clock, so every rule is a unit test.
 */
import { z } from 'zod'
import type { Emitter } from './events.ts'
import type { ClusterTiming } from './index.ts'

/** A live node of the fleet, as this node sees it. */
export interface Member {
  nodeId: string
  peerId: string
  region: string
  /** Multiaddrs (with `/p2p/<peerId>`) the member announced. */
  addresses: string[]
  /** When this node first heard it (ms since epoch, local clock). */
  since: number
  /** When this node last heard it. */
  lastSeen: number
  /** When the member's process started, by its own clock: a new value means it restarted. */
  startedAt: number
  /** True for the node's own entry. */
  self: boolean
}

/** Why a member left the live view. `restarted`: a new run of the node was heard; its `member:join` follows at once, with no leader change. */
export type LeaveReason = 'left' | 'timeout' | 'disconnected' | 'restarted'

/** A region's leader changed (`leader` undefined: the region has no live node). */
export interface LeaderChange {
  region: string
  leader: Member | undefined
  previous: Member | undefined
}

/** Events of the membership view. */
export type MembershipEvents = {
  'member:join': [member: Member]
  'member:leave': [member: Member, reason: LeaveReason]
  'leader:change': [change: LeaderChange]
}

/** What every node says about itself on the membership topic, every heartbeat. */
export const heartbeatSchema = z.object({
  nodeId: z.string().min(1).max(128),
  region: z.string().min(1).max(64),
  addresses: z.array(z.string().max(512)).max(32),
  /** The sender's start time (its own clock), telling one run of a node from the next. */
  startedAt: z.number().int().nonnegative(),
  /** Sent once by a node that stops cleanly, so peers drop it at once. */
  leaving: z.boolean().optional(),
})

/** A heartbeat message. */
export type Heartbeat = z.infer<typeof heartbeatSchema>

/** Timing of the membership view. */
export type MembershipOptions = Pick<ClusterTiming, 'memberTimeoutMs' | 'suspectMs'>

/** What the view needs to know about connections. */
export interface MembershipComponents {
  events: Emitter<MembershipEvents>
  /** Whether a libp2p connection to the peer is open now. */
  isConnected(peerId: string): boolean
}

interface Entry {
  member: Member
  /** Set when the member's connection closed: drop it unless heard before then. */
  suspectUntil: number | undefined
}

/** Orders members for leadership: lowest node id first, peer id breaks a tie. */
export function compareForLeadership(a: Member, b: Member): number {
  if (a.nodeId !== b.nodeId) return a.nodeId < b.nodeId ? -1 : 1
  if (a.peerId === b.peerId) return 0
  return a.peerId < b.peerId ? -1 : 1
}

/** The live view of the fleet. */
export class Membership {
  private readonly entries = new Map<string, Entry>()
  private readonly leaders = new Map<string, Member>()
  /**
   * Peers dropped lately, until when, and which run of them: a heartbeat of that run still
   * travelling through the mesh must not bring a dead node back (a new run, or a peer connected
   * again, is let back at once).
   */
  private readonly departed = new Map<string, { until: number; startedAt: number }>()
  readonly self: Member

  constructor(
    self: Omit<Member, 'lastSeen' | 'self' | 'startedAt'>,
    private readonly options: MembershipOptions,
    private readonly components: MembershipComponents,
  ) {
    this.self = { ...self, lastSeen: self.since, startedAt: self.since, self: true }
    this.entries.set(self.peerId, { member: this.self, suspectUntil: undefined })
    // The first leader is computed silently: nobody can be listening yet.
    this.leaders.set(self.region, this.self)
  }

  /** Every live member, self included, sorted by node id. */
  members(): Member[] {
    return [...this.entries.values()].map((entry) => ({ ...entry.member, addresses: [...entry.member.addresses] })).sort(compareForLeadership)
  }

  /** Every live member but self, as stored: read only, unsorted, for loops that only look (the dialer's). */
  *others(): Iterable<Readonly<Member>> {
    for (const entry of this.entries.values()) if (!entry.member.self) yield entry.member
  }

  /** The live member with this peer id. */
  member(peerId: string): Member | undefined {
    const entry = this.entries.get(peerId)
    return entry === undefined ? undefined : { ...entry.member, addresses: [...entry.member.addresses] }
  }

  /** The leader of a region: its live member with the lowest node id. */
  leader(region: string): Member | undefined {
    const leader = this.leaders.get(region)
    return leader === undefined ? undefined : { ...leader, addresses: [...leader.addresses] }
  }

  /** Records a heartbeat from `peerId` received at `now`. */
  heard(peerId: string, heartbeat: Heartbeat, now: number): void {
    if (peerId === this.self.peerId) return
    const entry = this.entries.get(peerId)
    if (heartbeat.leaving === true) {
      if (entry !== undefined) this.remove(peerId, 'left', now)
      return
    }
    if (entry === undefined) {
      const departed = this.departed.get(peerId)
      if (departed !== undefined) {
        if (now < departed.until && departed.startedAt === heartbeat.startedAt && !this.components.isConnected(peerId)) return
        this.departed.delete(peerId)
      }
      const member: Member = {
        nodeId: heartbeat.nodeId,
        peerId,
        region: heartbeat.region,
        addresses: [...heartbeat.addresses],
        since: now,
        lastSeen: now,
        startedAt: heartbeat.startedAt,
        self: false,
      }
      this.entries.set(peerId, { member, suspectUntil: undefined })
      this.components.events.emit('member:join', { ...member })
      this.updateLeaders()
      return
    }
    const changedIdentity = entry.member.nodeId !== heartbeat.nodeId || entry.member.region !== heartbeat.region
    // Only a newer run counts as a restart: a late heartbeat of the previous run changes nothing.
    const restarted = !changedIdentity && heartbeat.startedAt > entry.member.startedAt
    if (!changedIdentity && heartbeat.startedAt < entry.member.startedAt) return
    entry.member.lastSeen = now
    entry.member.addresses = [...heartbeat.addresses]
    // A heartbeat relayed by others after the connection closed may predate
    // the death: only a connection back, or a new run of the node, clears the suspicion.
    if (this.components.isConnected(peerId) || restarted) entry.suspectUntil = undefined
    if (restarted) {
      // The old run is gone with its state: listeners hear it leave and the new run join, so they
      // sync again. The same node leads: its leader record is refreshed without a change event.
      const previous = { ...entry.member }
      entry.member.startedAt = heartbeat.startedAt
      entry.member.since = now
      this.components.events.emit('member:leave', previous, 'restarted')
      this.components.events.emit('member:join', { ...entry.member })
      if (this.leaders.get(entry.member.region)?.peerId === peerId) this.leaders.set(entry.member.region, entry.member)
      return
    }
    if (changedIdentity) {
      // A node restarted under the same key with another id or region: to
      // listeners that is one node leaving and another joining.
      this.remove(peerId, 'left', now)
      this.departed.delete(peerId)
      this.heard(peerId, heartbeat, now)
    }
  }

  /** The last connection to `peerId` closed at `now`: it must be heard again soon. */
  disconnected(peerId: string, now: number): void {
    const entry = this.entries.get(peerId)
    if (entry === undefined || entry.member.self) return
    entry.suspectUntil = now + this.options.suspectMs
  }

  /** A connection to `peerId` is open again: it is no longer suspected. */
  connected(peerId: string): void {
    const entry = this.entries.get(peerId)
    if (entry !== undefined) entry.suspectUntil = undefined
  }

  /** Drops members not heard in time. */
  sweep(now: number): void {
    this.self.lastSeen = now
    for (const [peerId, departed] of this.departed) if (now >= departed.until) this.departed.delete(peerId)
    for (const [peerId, entry] of [...this.entries]) {
      if (entry.member.self) continue
      if (entry.suspectUntil !== undefined && now >= entry.suspectUntil) {
        this.remove(peerId, 'disconnected', now)
      } else if (entry.suspectUntil === undefined && this.components.isConnected(peerId)) {
        // An open connection is a sign of life: heartbeats may be rare (or late, on a busy host).
        entry.member.lastSeen = now
      } else if (now - entry.member.lastSeen >= this.options.memberTimeoutMs) {
        this.remove(peerId, 'timeout', now)
      }
    }
  }

  private remove(peerId: string, reason: LeaveReason, now: number): void {
    const entry = this.entries.get(peerId)
    if (entry === undefined || entry.member.self) return
    this.entries.delete(peerId)
    this.departed.set(peerId, { until: now + this.options.memberTimeoutMs, startedAt: entry.member.startedAt })
    this.components.events.emit('member:leave', { ...entry.member }, reason)
    this.updateLeaders()
  }

  private updateLeaders(): void {
    const next = new Map<string, Member>()
    for (const { member } of this.entries.values()) {
      const current = next.get(member.region)
      if (current === undefined || compareForLeadership(member, current) < 0) next.set(member.region, member)
    }
    const regions = new Set([...this.leaders.keys(), ...next.keys()])
    for (const region of [...regions].sort()) {
      const previous = this.leaders.get(region)
      const leader = next.get(region)
      if (previous?.peerId === leader?.peerId) continue
      if (leader === undefined) this.leaders.delete(region)
      else this.leaders.set(region, leader)
      this.components.events.emit('leader:change', {
        region,
        leader: leader === undefined ? undefined : { ...leader },
        previous: previous === undefined ? undefined : { ...previous },
      })
    }
  }
}
