/**
 * Request planning: the providers of a request and the keys of each, as data a recorder reads.
 * Spec: reference/adaptive-load-balancing.txt; reference/retries-and-fallbacks.txt.
 */
export { RateLimitBackoffs, type RateLimitBackoff } from './backoffs.ts'
export { RoutingLog } from './log.ts'
export { planRequest } from './request-plan.ts'
export { planKeys, keyRotationFor } from './key-plan.ts'
export { createRouter } from './router.ts'
export type { AttemptEffects, AttemptReport, AttemptStep, HoldNews, RequestRoute, RouteEnd, RouteTarget, TargetFailure, TargetFilter, TargetFit } from './request-route.ts'
export { attemptDeadlines, retryAfterMs, type DeadlineSettings } from './chain.ts'
export type { PlannedTarget, PlanInput, PlannerComponents, RequestPlan, TargetSource } from './types.ts'
