/**
 * @switchboard/routing — the pure core of Switchboard.
 *
 * Failure classes, retry and key-rotation planning, key selection. Nothing here performs I/O or
 * reads the clock or a random source on its own: time and randomness are passed in, so every
 * decision is an exact unit test. One folder per concept; this file is the package's only door.
 */
export * from './failures/failure-class.ts'
export * from './retries/backoff.ts'
export * from './retries/rotation.ts'

/**
 * Held keys (holds/): a key the provider refuses is held out of rotation, checked again by one
 * request per node when due, and released by a check, an operator or a key change. The hold set
 * is a mergeable value (versions from a hybrid logical clock, releases as tombstones), so the
 * fleet shares it by gossip, anti-entropy and Postgres snapshots.
 * Spec: reference/adaptive-load-balancing.txt, "Held Keys"; design.md, "Cluster model".
 */
export { createHolds, type Holds, type HoldsInit } from './holds/holds.ts'
export { compareVersions, type Version } from './holds/clock.ts'
export { holdId, type HoldEntry, type TraceOrigin } from './holds/entry.ts'
export { differingBuckets } from './holds/digest.ts'
export { parseHoldEntry } from './holds/snapshot.ts'
export type { Settlement } from './holds/settle.ts'
export { HoldClearError } from './holds/clear.ts'

/**
 * Adaptive load balancing (adaptive/): per-route metrics, a 5-second recompute of weights and
 * states, and provider-then-key selection from precomputed tables under the five switches.
 * Spec: reference/adaptive-load-balancing.txt.
 */
export { createAdaptiveBalancer, type AdaptiveBalancer, type AdaptiveBalancerInit } from './adaptive/balancer.ts'
export type { DirectionDecision } from './adaptive/directions.ts'
export { createSessionAffinity, readSessionHeaders, type SessionAffinity, type SessionAffinityInit, type SessionRoute } from './adaptive/session.ts'
export { FAIL_CYCLE_MIN_FAILURES, FAIL_SUSTAINED_MS, RECOMPUTE_INTERVAL_MS } from './adaptive/tuning.ts'
export { defaultLoadBalancerSettings, SWITCH_NAMES, keyNamesModel, keyServesModel } from './adaptive/types.ts'
export type { AttemptOutcome, BalancerKey, BalancerProvider, Direction, LoadBalancerSettings, RouteSnapshot, RouteState, SwitchName, TokenUsage } from './adaptive/types.ts'

/**
 * Request planning (planning/): the providers of a request and the keys of each, as data a recorder reads.
 * Spec: reference/adaptive-load-balancing.txt; reference/retries-and-fallbacks.txt.
 */
export { RateLimitBackoffs, type RateLimitBackoff } from './planning/backoffs.ts'
export { RoutingLog } from './planning/log.ts'
export { planRequest } from './planning/request-plan.ts'
export { planKeys, keyRotationFor } from './planning/key-plan.ts'
export { createRouter } from './planning/router.ts'
export type { AttemptEffects, AttemptReport, AttemptStep, HoldNews, RequestRoute, RouteEnd, RouteTarget, TargetFailure, TargetFilter, TargetFit } from './planning/request-route.ts'
export { attemptDeadlines, retryAfterMs, type DeadlineSettings } from './planning/chain.ts'
export type { PlannedTarget, PlanInput, PlannerComponents, RequestPlan, TargetSource } from './planning/types.ts'

/** Trials of failed routes (trials/): one request per due time across the fleet; a served one recovers the route everywhere (issue 35, item 8). */
export { createTrials, type Trials, type TrialsInit } from './trials/trials.ts'
export type { TrialEntry } from './trials/entry.ts'
export { TRIAL_CLAIM_SETTLE_MS, TRIAL_MAX_WAIT_MS, TRIAL_TOP_RUNG, trialWaitMs } from './trials/timing.ts'
