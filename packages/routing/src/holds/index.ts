/**
 * Held keys: a key the provider refuses is held out of rotation, checked again by one request
 * per node when due, and released by a check, an operator or a key change. The hold set is a
 * mergeable value (versions from a hybrid logical clock, releases as tombstones), so the fleet
 * shares it by gossip, anti-entropy and Postgres snapshots.
 * Spec: reference/adaptive-load-balancing.txt, "Held Keys"; design.md, "Cluster model".
 */
export { createHolds, type ClearOutcome, type Holds, type HoldsInit } from './holds.ts'
export { compareVersions, createClock, type HybridClock, type Version } from './clock.ts'
export {
  clearedName,
  holdId,
  settlesInFavour,
  type HoldEntry,
  type TraceOrigin,
  type HoldTarget,
  type ReleaseCause,
  type WaitSource,
} from './entry.ts'
export {
  LADDER_CAP_MS,
  LADDER_JITTER,
  LADDER_START_MS,
  MINIMUM_HOLD_MS,
  RESUME_WINDOW_MS,
  ladderWaitMs,
  nodeWaitMs,
  providerWaitMs,
  startingRung,
  topRung,
} from './ladder.ts'
export { HoldSet, TOMBSTONE_LIFETIME_MS, type HoldSnapshot } from './hold-set.ts'
export { DIGEST_BUCKETS, differingBuckets, type HoldDigest } from './digest.ts'
export { parseHoldEntry, parseHoldSnapshot } from './snapshot.ts'
export { refusalTarget, settleAnswer, type AttemptAnswer, type HoldEvent, type Settlement, type SettleContext } from './settle.ts'
export { CHECK_SLOT_TIMEOUT_MS, type HeldRoute } from './held-index.ts'
export { HoldClearError, validateClearFilter, type ClearFilter, type ClearResult, type HoldClearErrorCode } from './clear.ts'
export { holdConditions, type HoldCondition, type KeyNameLookup } from './conditions.ts'
export {
  checkLine,
  everyKeyHeldLine,
  formatWait,
  holdLine,
  keyLabel,
  providerCheckLine,
  releaseLine,
  renewLine,
  skipLine,
  type LoggedRoute,
} from './log-lines.ts'
