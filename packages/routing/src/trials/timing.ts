/** The pre-tuned times of trials, in one place (not user-configurable, like adaptive/tuning.ts). */
import { doubledWaitMs, topRungOf } from '../holds/ladder.ts'

/** The first trial of a failed route: one recompute after it failed. */
export const TRIAL_FIRST_WAIT_MS = 5_000
/** Each failed trial doubles the wait, up to this (the old route circuit breaker's timer). */
export const TRIAL_MAX_WAIT_MS = 30_000

/**
 * A claim is sent only after this long, if no rival claim won meanwhile: it must exceed a gossip
 * round trip (p99 about 60 ms at 10 nodes on loopback, notes/libp2p.md). Skipped with no peers.
 */
export const TRIAL_CLAIM_SETTLE_MS = 250
/** A claim whose trial was not sent within this long lapses (its node got no request to send it with). */
export const TRIAL_CLAIM_LAPSE_MS = 10_000
/** A trial sent that never reported back (its node went away mid-request) frees the round after this long. */
export const TRIAL_SLOT_TIMEOUT_MS = 2 * 60_000
/** A failing round overdue this long with no live claim is replaced when the route fails again: a new outage starts on the first rung. */
export const TRIAL_STALE_MS = 2 * TRIAL_MAX_WAIT_MS
/** Rounds nobody changed for this long are forgotten (the hybrid clock keeps newer rounds newer). */
export const TRIAL_ENTRY_LIFETIME_MS = 10 * 60_000

/** The wait before the trial after `rung` failed trials: 5 s doubled `rung` times, capped at 30 s. */
export function trialWaitMs(rung: number): number {
  return doubledWaitMs(TRIAL_FIRST_WAIT_MS, TRIAL_MAX_WAIT_MS, rung)
}

/** The highest rung worth climbing to: the first whose wait reaches the cap. */
export const TRIAL_TOP_RUNG = topRungOf(TRIAL_FIRST_WAIT_MS, TRIAL_MAX_WAIT_MS)
