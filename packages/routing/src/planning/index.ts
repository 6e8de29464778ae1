/**
 * Request planning: the providers of a request and the keys of each, as data a recorder reads.
 * Spec: reference/adaptive-load-balancing.txt; reference/retries-and-fallbacks.txt.
 */
export { RateLimitBackoffs, type RateLimitBackoff } from './backoffs.ts'
export { RoutingLog, describeEntry, keyChosenLine, type AttemptWhy, type CheckFact, type SkippedKeyFact } from './log.ts'
export { planRequest } from './request-plan.ts'
export { planKeys, keyRotationFor, SESSION_CHECK_GRACE_MS } from './key-plan.ts'
export { createRouter, type Router } from './router.ts'
export type {
  AttemptEffects,
  AttemptReport,
  AttemptStep,
  HoldChange,
  HoldNews,
  RequestRoute,
  RouteEnd,
  RouteRequest,
  RouteTarget,
  RouterComponents,
  TargetFailure,
  TargetFilter,
  TargetFit,
} from './request-route.ts'
export { attemptDeadlines, endsChain, mayContinue, retryAfterMs, DEFAULT_FIRST_TOKEN_MS, DEFAULT_STREAM_IDLE_MS, MAX_CONTINUATIONS, type AttemptDeadlines, type DeadlineSettings } from './chain.ts'
export type {
  KeyLeftOut,
  KeyLeftOutReason,
  KeyPlan,
  KeyPlanInput,
  PickedBy,
  PlannedTarget,
  PlanInput,
  PlannerComponents,
  RequestPlan,
  TargetSource,
} from './types.ts'
