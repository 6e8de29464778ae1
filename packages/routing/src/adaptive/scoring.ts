/**
 * The 5-second recompute of one model's routes: score parts, state transitions and weights.
 * Spec: reference/adaptive-load-balancing.txt, "How Weight Calculation Works" and "Key Capabilities".
 *
 *   penalty = ERROR_WEIGHT * errorPenalty + LATENCY_WEIGHT * latencyPenalty + UTILISATION_WEIGHT * utilisationPenalty
 *   weight  = WEIGHT_FLOOR + (WEIGHT_MAX - WEIGHT_FLOOR) * max(0, 1 - penalty)      (healthy, degraded)
 *   weight  = WEIGHT_FLOOR + (WEIGHT_MAX - WEIGHT_FLOOR) * ramp * (1 - LATENCY_WEIGHT * latencyPenalty)  (recovering)
 *   weight  = 0                                                                     (failed: out of rotation)
 */
import { firstAbove } from '../selection/weighted.ts'
import { decayTo, enterFailed, enterState, errorRate, recentLatency, type RouteMetrics } from './metrics.ts'
import {
  BASELINE_MIN_SAMPLES,
  DEGRADE_ERROR_RATE,
  DEGRADE_LATENCY_PENALTY,
  ERROR_RATE_FULL_PENALTY,
  ERROR_WEIGHT,
  FAIL_CYCLE_MIN_FAILURES,
  FAIL_ERROR_RATE,
  FAIL_SUSTAINED_MS,
  HEALTHY_ERROR_RATE,
  HEALTHY_LATENCY_PENALTY,
  LATENCY_BASELINE_SLOPE,
  LATENCY_PEER_SLOPE,
  LATENCY_WEIGHT,
  RECOVERY_CLEAN_REQUESTS,
  RECOVERY_MAX_FAILURES,
  RECOVERY_MIN_MS,
  RECOVERY_START,
  UTILISATION_FREE,
  UTILISATION_FULL_PENALTY,
  UTILISATION_WEIGHT,
  WEIGHT_FLOOR,
  WEIGHT_MAX,
} from './tuning.ts'

/** What the recompute needs to know besides the metrics. */
export interface ScoringContext {
  /** Whether the route's key is held for its model. */
  isHeld(provider: string, keyId: string, model: string): boolean
  /** How many keys of the provider share the model's load (never-used ones included), for fair share. */
  keysServing(provider: string, model: string): number
  /** The route just failed on its metrics (not a hold): its trials start. */
  routeFailed(metrics: RouteMetrics, now: number): void
}

/** Clamps to [0, 1]. */
function unit(value: number): number {
  return value < 0 ? 0 : value > 1 ? 1 : value
}

/** The error penalty of an error rate: linear up to the full-penalty rate. */
export function errorPenaltyOf(rate: number): number {
  return unit(rate / ERROR_RATE_FULL_PENALTY)
}

/** The latency penalty in [0, 1]: how many times slower than its peers' median and its own baseline (relative, never absolute). */
export function latencyPenaltyOf(recent: number | null, peerMedian: number | null, baseline: number | null): number {
  if (recent === null) return 0
  let penalty = 0
  if (peerMedian !== null && peerMedian > 0) penalty += LATENCY_PEER_SLOPE * Math.max(0, recent / peerMedian - 1)
  if (baseline !== null && baseline > 0) penalty += LATENCY_BASELINE_SLOPE * Math.max(0, recent / baseline - 1)
  return unit(penalty)
}

/** The utilisation penalty: zero up to fair share, full at UTILISATION_FULL_PENALTY times it. */
export function utilisationPenaltyOf(utilisation: number): number {
  return unit((utilisation - UTILISATION_FREE) / (UTILISATION_FULL_PENALTY - UTILISATION_FREE))
}

/** Maps a score in [0, 1] onto the fixed weight scale, never below the floor. */
export function weightOf(score: number): number {
  return WEIGHT_FLOOR + (WEIGHT_MAX - WEIGHT_FLOOR) * unit(score)
}

/** Progress of a recovering route: clean requests and time, whichever lags. */
export function recoveryProgressOf(metrics: RouteMetrics, now: number): number {
  const byRequests = metrics.recoveryClean / RECOVERY_CLEAN_REQUESTS
  const byTime = (now - metrics.stateSince) / RECOVERY_MIN_MS
  return unit(Math.min(byRequests, byTime))
}

/** Median of `sorted` with one element equal to `own` (which it holds) removed: a route is not its own peer; null when none is left. */
function medianWithout(sorted: readonly number[], own: number | null): number | null {
  const count = own === null ? sorted.length : sorted.length - 1
  if (count <= 0) return null
  // Any one of the elements equal to `own` goes: the median is the same whichever.
  const above = own === null ? sorted.length : firstAbove(sorted, own)
  const skip = own !== null && sorted[above]! > own ? above - 1 : above
  const at = (position: number) => sorted[position >= skip ? position + 1 : position]!
  return (at((count - 1) >> 1) + at(count >> 1)) / 2
}

/** True when the route stopped serving: FAIL_CYCLE_MIN_FAILURES failures in a row, nothing served for FAIL_SUSTAINED_MS. */
export function downNow(metrics: RouteMetrics, now: number): boolean {
  return metrics.failuresInRow >= FAIL_CYCLE_MIN_FAILURES && now - metrics.failingSince >= FAIL_SUSTAINED_MS
}

/** At the recompute: the route failed most of the cycle's attempts (at least FAIL_CYCLE_MIN_FAILURES), or is down. */
function failingThisCycle(metrics: RouteMetrics, now: number): boolean {
  const cycleFailures = metrics.cycleFailures
  return (cycleFailures >= FAIL_CYCLE_MIN_FAILURES && cycleFailures >= FAIL_ERROR_RATE * (cycleFailures + metrics.cycleSuccesses)) || downNow(metrics, now)
}

/** Moves a route between states; true when it failed. A failed route recovers only when served or released, never here. */
function transition(metrics: RouteMetrics, rate: number, latencyPenalty: number, now: number): boolean {
  const failing = failingThisCycle(metrics, now)
  metrics.cycleFailures = 0
  metrics.cycleSuccesses = 0
  switch (metrics.state) {
    case 'healthy':
    case 'degraded':
      if (rate >= FAIL_ERROR_RATE || failing) {
        enterFailed(metrics, now)
        return true
      } else if (metrics.state === 'healthy' && (rate >= DEGRADE_ERROR_RATE || latencyPenalty >= DEGRADE_LATENCY_PENALTY)) {
        enterState(metrics, 'degraded', now)
        metrics.recoveryClean = 0
      } else if (metrics.state === 'degraded' && rate < HEALTHY_ERROR_RATE && latencyPenalty < HEALTHY_LATENCY_PENALTY && metrics.recoveryClean >= RECOVERY_CLEAN_REQUESTS) {
        // Back to healthy only after serving live traffic cleanly, not because its errors decayed while idle.
        enterState(metrics, 'healthy', now)
      }
      return false
    case 'failed':
      return false
    case 'recovering':
      if (metrics.recoveryFailures >= RECOVERY_MAX_FAILURES) {
        enterFailed(metrics, now)
        return true
      }
      if (recoveryProgressOf(metrics, now) >= 1) enterState(metrics, 'healthy', now)
      return false
  }
}

/** Recomputes every route of one model: latency peers are all the model's other routes; fair share is per direction. */
export function rescoreModel(routes: readonly RouteMetrics[], now: number, context: ScoringContext): void {
  const latencies: number[] = []
  const loads = new Map<string, number>()
  for (const metrics of routes) {
    decayTo(metrics, now)
    const latency = recentLatency(metrics)
    if (latency !== null) latencies.push(latency)
    loads.set(metrics.provider, (loads.get(metrics.provider) ?? 0) + metrics.inFlight + metrics.attempts)
  }
  latencies.sort((left, right) => left - right)

  for (const metrics of routes) {
    const rate = errorRate(metrics)
    const recent = recentLatency(metrics)
    const baseline = metrics.baselineWeight >= BASELINE_MIN_SAMPLES ? metrics.baselineSum / metrics.baselineWeight : null
    const latencyPenalty = latencyPenaltyOf(recent, medianWithout(latencies, recent), baseline)
    const directionLoad = loads.get(metrics.provider) ?? 0
    const fairLoad = directionLoad / Math.max(1, context.keysServing(metrics.provider, metrics.model))
    const utilisation = fairLoad > 0 ? (metrics.inFlight + metrics.attempts) / fairLoad : 0
    if (transition(metrics, rate, latencyPenalty, now) && !context.isHeld(metrics.provider, metrics.keyId, metrics.model)) context.routeFailed(metrics, now)

    metrics.errorPenalty = errorPenaltyOf(rate)
    metrics.latencyPenalty = latencyPenalty
    metrics.utilisation = utilisation
    metrics.recoveryProgress = metrics.state === 'recovering' ? recoveryProgressOf(metrics, now) : 1
    metrics.weight = routeWeight(metrics)
  }
}

/** The weight a route will have once recovered (a recovering route's top of ramp): provider selection shares by it (tables.ts). */
export function settledWeight(metrics: RouteMetrics): number {
  if (metrics.state !== 'recovering') return metrics.weight
  return weightOf(1 - LATENCY_WEIGHT * metrics.latencyPenalty)
}

/** The weight of a route from its state and score parts (see the formula at the top). */
export function routeWeight(metrics: RouteMetrics): number {
  if (metrics.state === 'failed') return 0
  if (metrics.state === 'recovering') {
    // Scored on latency and recovery progress, not on the error history it just left behind.
    const ramp = RECOVERY_START + (1 - RECOVERY_START) * metrics.recoveryProgress
    return weightOf(ramp * (1 - LATENCY_WEIGHT * metrics.latencyPenalty))
  }
  const penalty =
    ERROR_WEIGHT * metrics.errorPenalty + LATENCY_WEIGHT * metrics.latencyPenalty + UTILISATION_WEIGHT * utilisationPenaltyOf(metrics.utilisation)
  return weightOf(1 - penalty)
}
