/**
 * The fleet's own health (issue 40, item 2): how fast holds, releases and settings reach this node
 * (origin time corrected by its clock's offset), gossip in, out and dropped per topic, repairs,
 * members, leaders, the hold snapshot's age and peers' clock offsets; on /metrics and /api/cluster.
 */
import { Counter, Histogram, type Gauge, type Registry } from 'prom-client'
import { scrapedCounter, scrapedGauge } from '../observability/metrics.ts'
import type { Cluster } from '@switchboard/cluster'
import type { PeerClocks } from './clock.ts'

/** What travelled: a hold placed, a hold released, the switches changed. */
export type PropagationKind = 'hold' | 'release' | 'settings'

/** How an entry came: gossip as it happened, or a repair of gossip that was missed. */
export type RepairVia = 'anti-entropy' | 'sync on join'

/** Propagation figures of one kind, as /api/cluster shows them. */
export interface PropagationFigures {
  count: number
  p50_ms: number | null
  p99_ms: number | null
  max_ms: number | null
}

export interface FleetSignalsView {
  propagation: Record<PropagationKind, PropagationFigures>
  repaired: Record<RepairVia, number>
  gossip: Record<string, { in: number; out: number; dropped: number }>
  snapshot_age_s: number | null
  clock_offset_max_ms: number
}

/** Lags kept per kind for the API's quantiles: the latest ones. */
const RECENT = 512
const KINDS: readonly PropagationKind[] = ['hold', 'release', 'settings']

export class FleetSignals {
  private readonly recent = new Map<PropagationKind, { lags: number[]; count: number }>(KINDS.map((kind) => [kind, { lags: [], count: 0 }]))
  private readonly repairs: Record<RepairVia, number> = { 'anti-entropy': 0, 'sync on join': 0 }
  private readonly lagSeconds: Histogram<'kind'>
  private readonly repairCounter: Counter<'via'>
  private cluster: Cluster | null = null
  private lastSnapshotAt: number | null = null

  constructor(
    registry: Registry,
    private readonly clocks: PeerClocks,
    private readonly now: () => number,
  ) {
    const registers = [registry]
    this.lagSeconds = new Histogram({
      name: 'switchboard_fleet_propagation_seconds',
      help: 'From a change at its origin node (its clock, corrected by the measured offset) to its apply here, by kind (hold, release, settings)',
      labelNames: ['kind'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    })
    this.repairCounter = new Counter({ name: 'switchboard_fleet_repaired_entries_total', help: 'Hold entries gossip missed that a sync brought, by how (anti-entropy, sync on join)', labelNames: ['via'], registers })
    // Of the node's one fleet membership: on a node with workers only the fleet worker knows it, and the highest wins.
    const gauge = (name: string, help: string, read: (gauge: Gauge) => void, labelNames: string[] = []) => scrapedGauge(registry, name, help, labelNames, read, 'max')
    gauge('switchboard_fleet_members', 'Live fleet members this node sees, itself included', (members) => {
      if (this.cluster) members.set(this.cluster.members().length)
    })
    gauge('switchboard_fleet_leader', 'The leader of each region as this node sees it (1 for the leader)', (leaders) => {
      leaders.reset()
      const cluster = this.cluster
      if (!cluster) return
      for (const region of new Set(cluster.members().map((member) => member.region))) {
        const leader = cluster.leader(region)
        if (leader) leaders.set({ region, node_id: leader.nodeId }, 1)
      }
    }, ['region', 'node_id'])
    const gossip = 'Gossip messages per topic: published here (out), received from peers (in), thrown away as invalid or oversized (dropped)'
    scrapedCounter(registry, 'switchboard_fleet_gossip_messages_total', gossip, ['topic', 'direction'], (counter) => {
      for (const [topic, counts] of Object.entries(this.gossip())) for (const direction of ['in', 'out', 'dropped'] as const) counter.inc({ topic, direction }, counts[direction])
    })
    gauge('switchboard_fleet_snapshot_age_seconds', 'Time since the last hold snapshot written to Postgres (by any leader)', (age) => {
      const seconds = this.snapshotAge()
      if (seconds !== null) age.set(seconds)
    })
    gauge('switchboard_fleet_clock_offset_max_seconds', "The largest offset of a peer's clock from this node's, either way, measured by round trips", (offset) => offset.set(this.clocks.widest() / 1000))
  }

  /** The cluster once it runs (none when standalone). */
  attach(cluster: Cluster): void {
    this.cluster = cluster
  }

  /** A change that `originNodeId` made at `originAt` (its clock) applied here now. */
  applied(kind: PropagationKind, originNodeId: string, originAt: number): void {
    const lagMs = Math.max(0, this.now() - this.clocks.toLocal(originNodeId, originAt))
    this.lagSeconds.observe({ kind }, lagMs / 1000)
    const recent = this.recent.get(kind)!
    recent.count++
    recent.lags.push(lagMs)
    if (recent.lags.length > RECENT) recent.lags.shift()
  }

  repaired(via: RepairVia, entries: number): void {
    this.repairs[via] += entries
    this.repairCounter.inc({ via }, entries)
  }

  /** The last hold snapshot's time, as Postgres has it. */
  snapshotTaken(at: number): void {
    this.lastSnapshotAt = at
  }

  snapshotAge(): number | null {
    return this.lastSnapshotAt === null ? null : Math.max(0, (this.now() - this.lastSnapshotAt) / 1000)
  }

  gossip(): FleetSignalsView['gossip'] {
    const topics = this.cluster?.stats().topics ?? {}
    // By the topic's own name ("holds", "rate-limits/region/eu"), without the fleet's prefix.
    return Object.fromEntries(Object.entries(topics).map(([topic, counts]) => [topic.replace(/^\/switchboard\/\d+\//, ''), { in: counts.received, out: counts.published, dropped: counts.invalid + counts.oversized }]))
  }

  view(): FleetSignalsView {
    const propagation = Object.fromEntries(KINDS.map((kind) => [kind, figures(this.recent.get(kind)!)])) as Record<PropagationKind, PropagationFigures>
    return { propagation, repaired: { ...this.repairs }, gossip: this.gossip(), snapshot_age_s: this.snapshotAge(), clock_offset_max_ms: Math.round(this.clocks.widest()) }
  }
}

function figures(recent: { lags: number[]; count: number }): PropagationFigures {
  if (recent.lags.length === 0) return { count: recent.count, p50_ms: null, p99_ms: null, max_ms: null }
  const sorted = [...recent.lags].sort((a, b) => a - b)
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 10) / 10
  return { count: recent.count, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: Math.round(sorted[sorted.length - 1]! * 10) / 10 }
}
