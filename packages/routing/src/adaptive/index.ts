/**
 * Adaptive load balancing: per-route metrics, a 5-second recompute of weights and states, and
 * provider-then-key selection from precomputed tables under the five switches.
 * Spec: reference/adaptive-load-balancing.txt.
 */
export { createAdaptiveBalancer, type AdaptiveBalancer, type AdaptiveBalancerInit } from './balancer.ts'
export { withDirections, type DirectionDecision, type DirectionOptions, type DirectionReason } from './directions.ts'
export type { RotationWeights } from './tables.ts'
export { directionLog, type RoutingLogEntry } from './routing-log.ts'
export {
  applySessionAffinity,
  createSessionAffinity,
  readSessionHeaders,
  SESSION_HEADERS,
  MAX_SESSION_TTL_MS,
  type SessionRequest,
  type AffinityOutcome,
  type AffinityResult,
  type SessionAffinity,
  type SessionAffinityInit,
  type SessionRoute,
} from './session.ts'
export { FAIL_CYCLE_MIN_FAILURES, FAIL_SUSTAINED_MS, RECOMPUTE_INTERVAL_MS, WEIGHT_FLOOR, WEIGHT_MAX } from './tuning.ts'
export {
  defaultLoadBalancerSettings,
  SWITCH_NAMES,
  keyNamesModel,
  keyServesModel,
  type AttemptOutcome,
  type BalancerKey,
  type BalancerProvider,
  type HeldPredicate,
  type LoadBalancerSettings,
  type RouteRef,
  type RouteSnapshot,
  type RouteState,
  type ScoreParts,
  type SwitchName,
  type TokenUsage,
  type Direction,
} from './types.ts'
