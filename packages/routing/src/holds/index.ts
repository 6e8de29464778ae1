/**
 * Held keys: a key the provider refuses is held out of rotation, checked again by one request
 * per node when due, and released by a check, an operator or a key change. The hold set is a
 * mergeable value (versions from a hybrid logical clock, releases as tombstones), so the fleet
 * shares it by gossip, anti-entropy and Postgres snapshots.
 * Spec: reference/adaptive-load-balancing.txt, "Held Keys"; design.md, "Cluster model".
 */
export { createHolds, type Holds, type HoldsInit } from './holds.ts'
export { compareVersions, type Version } from './clock.ts'
export { holdId, type HoldEntry, type TraceOrigin } from './entry.ts'
export { differingBuckets } from './digest.ts'
export { parseHoldEntry } from './snapshot.ts'
export type { Settlement } from './settle.ts'
export { HoldClearError } from './clear.ts'
