/** Per-route metrics: time-decayed counters fed by every attempt, decayed lazily to the `now` each observation carries. */
import { countsAgainstKey } from '../failures/failure-class.ts'
import type { AttemptOutcome, RouteRef, RouteState, ScoreParts } from './types.ts'
import {
  BASELINE_HALF_LIFE_MS,
  COMPLETION_TOKENS_PER_UNIT,
  ERROR_RATE_MIN_VOLUME,
  LATENCY_MIN_SAMPLES,
  PROMPT_TOKENS_PER_UNIT,
  RECENT_HALF_LIFE_MS,
  WEIGHT_MAX,
} from './tuning.ts'

/** Everything the balancer knows about one route, with its score parts as of the last recompute. Mutable; owned by the balancer. */
export interface RouteMetrics extends RouteRef, ScoreParts {
  /** The time the decayed counters below are valid at. */
  updatedAt: number
  /** Decayed counts of attempts that count against the key (served vs failed). */
  successes: number
  failures: number
  /** Undecayed counts since the last recompute, for failing a route within one cycle. */
  cycleSuccesses: number
  cycleFailures: number
  /** When the last served attempt ended; null before any. */
  lastServedAt: number | null
  /** Failures (that count against the key) in a row since the last served attempt, and when the first of them ended. */
  failuresInRow: number
  failingSince: number
  /** Decayed count of every attempt that reached the route, for utilisation and actual share. */
  attempts: number
  /** Decayed sum and weight of work-normalised latency of served attempts: recent, and the long baseline. */
  latencySum: number
  latencyWeight: number
  baselineSum: number
  baselineWeight: number
  /** Decayed raw latency (ms) of served attempts, for display. */
  rawLatencySum: number
  inFlight: number
  /** When this node last sent the route an attempt; null before any (a recovering route idle for long is due one). */
  lastAttemptAt: number | null
  state: RouteState
  stateSince: number
  /** Clean attempts in a row since the route began recovering (or degraded), and failures since it began recovering. */
  recoveryClean: number
  recoveryFailures: number
  weight: number
}

/** A fresh route: healthy at full weight, the reference's optimistic cold start. */
export function createRouteMetrics(provider: string, model: string, keyId: string, now: number): RouteMetrics {
  return {
    provider,
    model,
    keyId,
    updatedAt: now,
    successes: 0,
    failures: 0,
    cycleSuccesses: 0,
    cycleFailures: 0,
    lastServedAt: null,
    failuresInRow: 0,
    failingSince: now,
    attempts: 0,
    latencySum: 0,
    latencyWeight: 0,
    baselineSum: 0,
    baselineWeight: 0,
    rawLatencySum: 0,
    inFlight: 0,
    lastAttemptAt: null,
    state: 'healthy',
    stateSince: now,
    recoveryClean: 0,
    recoveryFailures: 0,
    weight: WEIGHT_MAX,
    errorPenalty: 0,
    latencyPenalty: 0,
    utilisation: 0,
    recoveryProgress: 1,
  }
}

/** Brings every decayed counter forward to `now`. An observation from the past decays nothing. */
export function decayTo(metrics: RouteMetrics, now: number): void {
  const elapsed = now - metrics.updatedAt
  if (elapsed <= 0) return
  const recent = Math.pow(0.5, elapsed / RECENT_HALF_LIFE_MS)
  const baseline = Math.pow(0.5, elapsed / BASELINE_HALF_LIFE_MS)
  metrics.successes *= recent
  metrics.failures *= recent
  metrics.attempts *= recent
  metrics.latencySum *= recent
  metrics.latencyWeight *= recent
  metrics.rawLatencySum *= recent
  metrics.baselineSum *= baseline
  metrics.baselineWeight *= baseline
  metrics.updatedAt = now
}

/** Latency divided by the request's work, so a long answer is not mistaken for a slow key. */
export function normalisedLatency(latencyMs: number, promptTokens = 0, completionTokens = 0): number {
  const work = 1 + Math.max(0, promptTokens) / PROMPT_TOKENS_PER_UNIT + Math.max(0, completionTokens) / COMPLETION_TOKENS_PER_UNIT
  return Math.max(0, latencyMs) / work
}

/** Folds one attempt into the counters: caller faults and cancels count as load, never against the key. */
export function recordAttempt(metrics: RouteMetrics, outcome: AttemptOutcome): void {
  decayTo(metrics, outcome.now)
  metrics.attempts += 1
  const failureClass = outcome.failureClass
  if (failureClass === null) {
    metrics.successes += 1
    metrics.cycleSuccesses += 1
    metrics.failuresInRow = 0
    metrics.lastServedAt = outcome.now
    const latency = normalisedLatency(outcome.latencyMs, outcome.promptTokens, outcome.completionTokens)
    metrics.latencySum += latency
    metrics.latencyWeight += 1
    metrics.baselineSum += latency
    metrics.baselineWeight += 1
    metrics.rawLatencySum += Math.max(0, outcome.latencyMs)
    if (metrics.state === 'recovering' || metrics.state === 'degraded') metrics.recoveryClean += 1
    return
  }
  if (!countsAgainstKey(failureClass)) return
  metrics.failures += 1
  metrics.cycleFailures += 1
  if (metrics.failuresInRow++ === 0) metrics.failingSince = outcome.now
  if (metrics.state === 'recovering' || metrics.state === 'degraded') metrics.recoveryClean = 0
  if (metrics.state === 'recovering') metrics.recoveryFailures += 1
}

/** The decayed error rate, over at least ERROR_RATE_MIN_VOLUME attempts. */
export function errorRate(metrics: RouteMetrics): number {
  const total = metrics.successes + metrics.failures
  return metrics.failures / Math.max(total, ERROR_RATE_MIN_VOLUME)
}

/** Recent work-normalised latency, or null while there is too little to judge. */
export function recentLatency(metrics: RouteMetrics): number | null {
  return metrics.latencyWeight >= LATENCY_MIN_SAMPLES ? metrics.latencySum / metrics.latencyWeight : null
}

/** Recent mean latency in ms of served attempts, for display; null before any. */
export function displayLatency(metrics: RouteMetrics): number | null {
  return metrics.latencyWeight > 0 ? metrics.rawLatencySum / metrics.latencyWeight : null
}

/** Moves the route to `state` as of `now`. */
export function enterState(metrics: RouteMetrics, state: RouteState, now: number): void {
  metrics.state = state
  metrics.stateSince = now
}

/** Forgets the error history when a route starts recovering (reference: "so they aren't held back by stale error history"). */
export function enterRecovering(metrics: RouteMetrics, now: number): void {
  enterState(metrics, 'recovering', now)
  metrics.successes = 0
  metrics.failures = 0
  metrics.recoveryClean = 0
  metrics.recoveryFailures = 0
  // A run of failures from before the recovery says nothing about the route now.
  metrics.failuresInRow = 0
}

/** Moves the route to failed (out of rotation); an already failed route keeps its breaker start. */
export function enterFailed(metrics: RouteMetrics, now: number): void {
  if (metrics.state === 'failed') return
  enterState(metrics, 'failed', now)
  metrics.weight = 0
}
