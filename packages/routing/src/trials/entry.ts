/** A route's trial round (issue 35, item 8): when its next trial is due and who took it, merged by one total order like holds. */
import { compareVersions, type Version } from '../holds/clock.ts'
import type { RouteRef } from '../adaptive/types.ts'

/** A node's claim on the trial of one round. */
export interface TrialClaim {
  nodeId: string
  /** Counts up from 1 within a round: a lapsed claim is replaced by the next generation, which wins on every node. */
  generation: number
  /** When the node claimed the slot (its clock, epoch ms). */
  at: number
  /** When it sent the trial request; null while the claim settles. */
  startedAt: number | null
}

/** The round of one route: opened by a failure with no failing round known, by a failed trial (the next rung), or by a served one. */
export interface TrialEntry extends RouteRef {
  /** The change that opened the round (hybrid logical time): a newer round replaces an older one. */
  round: Version
  /** `failing`: trials are due; `served`: a trial (or any request sent after the failure) was served. */
  state: 'failing' | 'served'
  /** Trials that failed in a row so far: the wait before the next one climbs with it. */
  rung: number
  /** When the round's trial is due (epoch ms); for a served round, when it served. */
  dueAt: number
  claim: TrialClaim | null
  /** The region of the node that opened it: its nodes whose route served nothing since fail the route too, without paying for the outage themselves. */
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
