/**
 * A route's trial round: the fleet-wide record of a route that failed on live traffic, when its
 * next trial request is due, and which node took that trial (issue 35, item 8). Replicated by
 * gossip like holds, merged by one total order so every node ends with the same round.
 */
import { compareVersions, type Version } from '../holds/clock.ts'

/** A node's claim on the trial of one round. */
export interface TrialClaim {
  nodeId: string
  /**
   * Claims of one round count up from 1: a claim that lapsed (never started, or never answered)
   * is replaced by one of the next generation, which wins over it on every node.
   */
  generation: number
  /** When the node claimed the slot (its clock, epoch ms). */
  at: number
  /** When it sent the trial request; null while the claim settles. */
  startedAt: number | null
}

/**
 * The round of one route: opened when the route fails on a node that knows no failing round, when
 * a trial fails (the next, on the next rung) or when a trial serves (the outage is over).
 */
export interface TrialEntry {
  provider: string
  model: string
  keyId: string
  /** The change that opened the round (hybrid logical time): a newer round replaces an older one. */
  round: Version
  /** `failing`: trials are due; `served`: a trial (or any request sent after the failure) was served. */
  state: 'failing' | 'served'
  /** Trials that failed in a row so far: the wait before the next one climbs with it. */
  rung: number
  /** When the round's trial is due (epoch ms); for a served round, when it served. */
  dueAt: number
  claim: TrialClaim | null
  /**
   * The region of the node that opened the round. A failing round is also news to the nodes of
   * that region whose route has served nothing since: they fail it too, without paying for the
   * outage on their own traffic (like rate-limit signals, failures are shared within a region).
   */
  region: string
}

/**
 * Orders two rounds of the same route: positive when `left` wins. A newer round wins; within a
 * round, a later claim generation, then a trial already sent over one still settling, then the
 * lower node id (the tie-break among claims made before their claimers heard of each other).
 */
export function compareTrialEntries(left: TrialEntry, right: TrialEntry): number {
  const byRound = compareVersions(left.round, right.round)
  if (byRound !== 0) return byRound
  const leftClaim = left.claim
  const rightClaim = right.claim
  if (leftClaim === null || rightClaim === null) return leftClaim === rightClaim ? 0 : leftClaim === null ? -1 : 1
  if (leftClaim.generation !== rightClaim.generation) return leftClaim.generation < rightClaim.generation ? -1 : 1
  const leftStarted = leftClaim.startedAt !== null
  if (leftStarted !== (rightClaim.startedAt !== null)) return leftStarted ? 1 : -1
  if (leftClaim.nodeId !== rightClaim.nodeId) return leftClaim.nodeId < rightClaim.nodeId ? 1 : -1
  // The same node's claim: the later word about it wins (it cannot un-send a trial).
  if (leftClaim.at !== rightClaim.at) return leftClaim.at < rightClaim.at ? -1 : 1
  return (leftClaim.startedAt ?? 0) - (rightClaim.startedAt ?? 0)
}
