/**
 * Adaptive load balancing: per-route metrics, a 5-second recompute of weights and states, and
 * provider-then-key selection from precomputed tables under the five switches.
 * Spec: reference/adaptive-load-balancing.txt.
 */
export { createAdaptiveBalancer, type AdaptiveBalancer, type AdaptiveBalancerInit } from './balancer.ts'
export type { DirectionDecision } from './directions.ts'
export { createSessionAffinity, readSessionHeaders, type SessionAffinity, type SessionAffinityInit, type SessionRoute } from './session.ts'
export { FAIL_CYCLE_MIN_FAILURES, FAIL_SUSTAINED_MS, RECOMPUTE_INTERVAL_MS } from './tuning.ts'
export {
  defaultLoadBalancerSettings,
  SWITCH_NAMES,
  keyNamesModel,
  keyServesModel,
  type AttemptOutcome,
  type BalancerKey,
  type BalancerProvider,
  type Direction,
  type LoadBalancerSettings,
  type RouteState,
  type SwitchName,
  type TokenUsage,
} from './types.ts'
