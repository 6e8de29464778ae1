/**
 * Request planning: the providers of a request and the keys of each, as data a recorder reads.
 * Spec: reference/adaptive-load-balancing.txt; reference/retries-and-fallbacks.txt.
 */
export { RateLimitBackoffs, type RateLimitBackoff } from './backoffs.ts'
export { RoutingLog, describeEntry, keyChosenLine, type AttemptWhy, type CheckFact, type SkippedKeyFact } from './log.ts'
export {
  planKeys,
  planRequest,
  SESSION_CHECK_GRACE_MS,
  type KeyLeftOut,
  type KeyLeftOutReason,
  type KeyPlan,
  type KeyPlanInput,
  type PickedBy,
  type PlannedTarget,
  type PlanInput,
  type PlannerComponents,
  type RequestPlan,
  type TargetSource,
} from './plan.ts'
