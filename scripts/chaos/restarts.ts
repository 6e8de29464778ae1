/**
 * "No hold lost across restarts", judged after the run from every live node's held keys
 * polled just before each kill and once the restarted node answers again. Pure, with its
 * own unit tests (rules.test.ts). The rule, also written out in scripts/chaos/README.md:
 *
 * Just before a kill the fleet's holds are polled on every live node; once the restarted
 * node answers, it and its peers are polled again. A hold target (provider, key, model) held before the kill is lost when the restarted node does not list it at its first
 * answer while a peer still lists it with a `since` at least the grace older than that
 * answer (so the peer's hold is not one placed while the node was starting). A hold no peer
 * lists any more was released meanwhile, not lost; one that only the killed node listed
 * before the kill (its gossip never left) is counted apart. A lost hold is lost whether or
 * not it was due: a due hold stays held until a check releases it. The other way round, a
 * hold the restarted node lists that no peer lists is resurrected (a stale restore), unless
 * the restarted node no longer lists it either when polled again a grace later: then a peer
 * released it between the two polls (a check served) and the release reached it.
 */
import { PROPAGATION_GRACE_MS } from './held-traffic.ts'

/** A hold as the conditions API lists it, reduced to what the restart rule compares. */
export interface ListedHold {
  provider: string
  keyId: string
  keyName: string | null
  model: string | null
  since: number
  nextCheckAt: number
}

/** The fleet's holds around one restart. */
export interface RestartObservation {
  nodeId: string
  /** When the kill was sent, and when the node answered again (epoch ms). */
  killedAt: number
  backAt: number
  /** Every live node's holds just before the kill (the killed node included). */
  before: Record<string, ListedHold[]>
  /** The restarted node's holds at its first answer. */
  after: ListedHold[]
  /** The other live nodes' holds polled right after that. */
  peersAfter: Record<string, ListedHold[]>
  /** The restarted node's holds polled again a grace after `peersAfter` (taken only when it listed one no peer did). */
  afterSettled?: ListedHold[]
  /** Age of the fleet's last Postgres snapshot at the kill (null: none yet, or not known). */
  snapshotAgeMs: number | null
}

/** A hold the restarted node did not have back. */
export interface LostHold {
  nodeId: string
  keyName: string | null
  model: string | null
  /** It was due (on the peer that still held it) when the node came back. */
  wasDue: boolean
}

/** The verdict on one restart. */
export interface RestartVerdict {
  nodeId: string
  killedAt: number
  backAt: number
  nodeBefore: number
  fleetBefore: number
  nodeAfter: number
  fleetAfter: number
  releasedMeanwhile: number
  /** Held only by the killed node just before the kill, and by nobody after. */
  onlyOnKilledNode: number
  /** Listed by the restarted node but by no peer, and still by the restarted node a grace later. */
  resurrected: number
  snapshotAgeMs: number | null
  lost: LostHold[]
}

/** The key of a hold target, for comparing views. */
export const targetId = (hold: Pick<ListedHold, 'provider' | 'keyId' | 'model'>) => JSON.stringify([hold.provider, hold.keyId, hold.model])

/** Every target any view lists, each with its oldest `since` (the hold that has been there longest). */
function union(views: readonly ListedHold[][]): Map<string, ListedHold> {
  const holds = new Map<string, ListedHold>()
  for (const view of views) {
    for (const hold of view) {
      const known = holds.get(targetId(hold))
      if (!known || hold.since < known.since) holds.set(targetId(hold), hold)
    }
  }
  return holds
}

/** Applies the "lost hold" rule (see the file comment) to one restart. */
export function judgeRestart(restart: RestartObservation, graceMs = PROPAGATION_GRACE_MS): RestartVerdict {
  const before = union(Object.values(restart.before))
  const after = new Set(restart.after.map(targetId))
  const peers = union(Object.values(restart.peersAfter))
  const peersBefore = union(Object.entries(restart.before).filter(([nodeId]) => nodeId !== restart.nodeId).map(([, view]) => view))
  const lost: LostHold[] = []
  let releasedMeanwhile = 0
  let onlyOnKilledNode = 0
  for (const [id, hold] of before) {
    if (after.has(id)) continue
    const peer = peers.get(id)
    if (!peer) {
      if (peersBefore.has(id)) releasedMeanwhile++
      else onlyOnKilledNode++
      continue
    }
    // A hold the peers placed while the node was starting is not one it could have restored.
    if (peer.since > restart.backAt - graceMs) continue
    lost.push({ nodeId: restart.nodeId, keyName: hold.keyName, model: hold.model, wasDue: peer.nextCheckAt <= restart.backAt })
  }
  return {
    nodeId: restart.nodeId,
    killedAt: restart.killedAt,
    backAt: restart.backAt,
    nodeBefore: restart.before[restart.nodeId]?.length ?? 0,
    fleetBefore: before.size,
    nodeAfter: restart.after.length,
    fleetAfter: union([restart.after, ...Object.values(restart.peersAfter)]).size,
    releasedMeanwhile,
    onlyOnKilledNode,
    resurrected: restart.after.filter((hold) => !peers.has(targetId(hold)) && (restart.afterSettled?.some((settled) => targetId(settled) === targetId(hold)) ?? true)).length,
    snapshotAgeMs: restart.snapshotAgeMs,
    lost,
  }
}
