/**
 * The pre-tuned times of trials, in one place (like adaptive/tuning.ts: not user-configurable,
 * so a change to any of them is one reviewed diff).
 */

const SECOND = 1000
const MINUTE = 60 * SECOND

/** The first trial of a failed route: one recompute after it failed. */
export const TRIAL_FIRST_WAIT_MS = 5 * SECOND
/** Each failed trial doubles the wait, up to this (the old route circuit breaker's timer). */
export const TRIAL_MAX_WAIT_MS = 30 * SECOND

/**
 * A claim is sent only after this long, and only if no other node's claim on the same round won
 * meanwhile. A rival claim can be made up to one gossip delay after ours (before ours reached its
 * node) and takes one more delay to reach us, so this must exceed a round trip: gossip p99 is
 * under 10 ms at 3 nodes and about 60 ms at 10 on loopback (notes/libp2p.md), so 120 ms there.
 * Short against the wait between trials. A node that hears no peers skips it.
 */
export const TRIAL_CLAIM_SETTLE_MS = 250
/** A claim whose trial was not sent within this long lapses (its node got no request to send it with). */
export const TRIAL_CLAIM_LAPSE_MS = 10 * SECOND
/** A trial sent that never reported back (its node went away mid-request) frees the round after this long. */
export const TRIAL_SLOT_TIMEOUT_MS = 2 * MINUTE
/**
 * A failing round not due for this long, with no live claim, is left behind by the route failing
 * again: a new outage starts on the first rung instead of inheriting an old one's.
 */
export const TRIAL_STALE_MS = 2 * TRIAL_MAX_WAIT_MS
/** Rounds nobody changed for this long are forgotten (the hybrid clock keeps newer rounds newer). */
export const TRIAL_ENTRY_LIFETIME_MS = 10 * MINUTE

/** The wait before the trial after `rung` failed trials: 5 s doubled `rung` times, capped at 30 s. */
export function trialWaitMs(rung: number): number {
  return Math.min(TRIAL_FIRST_WAIT_MS * 2 ** Math.max(0, rung), TRIAL_MAX_WAIT_MS)
}

/** The highest rung worth climbing to: the first whose wait reaches the cap. */
export const TRIAL_TOP_RUNG = Math.ceil(Math.log2(TRIAL_MAX_WAIT_MS / TRIAL_FIRST_WAIT_MS))
