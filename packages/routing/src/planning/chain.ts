/**
 * How one request walks its targets (reference/retries-and-fallbacks.txt), and the rules issue 35
 * added inside an attempt: its deadlines, and when a broken stream is continued.
 */
import type { AttemptFailure } from '../failures/failure-class.ts'
import type { RotationStopReason } from '../retries/rotation.ts'
import type { KeyPlan } from './types.ts'

/** True when the way one target ended stops the whole chain: the caller left, or the primary says the request itself is wrong. */
export function endsChain(reason: RotationStopReason, primary: boolean): boolean {
  return reason === 'cancelled' || (reason === 'caller_fault' && primary)
}

/**
 * How long until a key of the target may serve again: the earliest left-out key's due time
 * (held for a rate limit, backed off), or the provider's hint on a rate limit; null for none.
 */
export function retryAfterMs(plan: KeyPlan, last: AttemptFailure | null, now: number): number | null {
  let earliest: number | null = null
  for (const key of plan.leftOut) if (!key.dead && (earliest === null || key.until - now < earliest)) earliest = Math.max(0, key.until - now)
  const hint = last?.failureClass === 'rate_limit' ? last.waitHintMs : null
  if (hint !== null && (earliest === null || hint < earliest)) earliest = hint
  return earliest
}

/** Time to the first content event when nobody set one and something else could take the request. */
export const DEFAULT_FIRST_TOKEN_MS = 10_000
/** Longest silence inside a stream when nobody set one. */
export const DEFAULT_STREAM_IDLE_MS = 60_000

/** Deadlines as a provider's settings or a request's headers set them (ms); absent where they set none. */
export interface DeadlineSettings {
  /** Response headers of a stream, or the whole JSON answer. */
  requestMs?: number
  /** A stream's first content event, from the attempt's start; null for none. */
  firstTokenMs?: number | null
  /** Longest silence inside a stream. */
  idleMs?: number
}

/** The deadlines one attempt runs under (ms). */
export type AttemptDeadlines = Required<DeadlineSettings>

/**
 * One attempt's deadlines: the request's own, else the provider's, else the defaults; the default
 * first-token deadline only while something else could take the request (`alternatives`).
 */
export function attemptDeadlines(provider: DeadlineSettings & { requestMs: number }, request: DeadlineSettings | undefined, alternatives: boolean): AttemptDeadlines {
  const firstTokenMs = request?.firstTokenMs ?? provider.firstTokenMs ?? (alternatives ? DEFAULT_FIRST_TOKEN_MS : null)
  return { requestMs: request?.requestMs ?? provider.requestMs, firstTokenMs, idleMs: request?.idleMs ?? provider.idleMs ?? DEFAULT_STREAM_IDLE_MS }
}

/** How many times one request's stream may be continued: a target that cuts every stream it starts is not asked forever. */
export const MAX_CONTINUATIONS = 2

/** Whether the `continuation`-th continuation of a broken stream may be tried: a prefill can carry what was sent, and MAX_CONTINUATIONS is not spent. */
export function mayContinue(continuation: number, continuable: boolean): 'yes' | 'not_continuable' | 'continued_enough' {
  return continuation > MAX_CONTINUATIONS ? 'continued_enough' : continuable ? 'yes' : 'not_continuable'
}
