/**
 * Failure classes: what a failed upstream attempt says about the key that made it.
 * Spec: reference/adaptive-load-balancing.txt, "What holds a key".
 */

/** Every class a failed attempt can end in. `timeout` and `cancelled` are endings the gateway caused. */
export const FAILURE_CLASSES = [
  'credential',
  'quota',
  'model_access',
  'model_gone',
  'region_blocked',
  'rate_limit',
  'transient',
  'caller_fault',
  /** The request is longer than the model's context window here: another target, with a larger one, may serve it. */
  'context_length',
  'unknown',
  'timeout',
  'cancelled',
] as const

export type FailureClass = (typeof FAILURE_CLASSES)[number]

/** What a refusal applies to: the whole key (every model), or the one model it was sent for. */
export type FailureScope = 'key' | 'model'

/** The normalized outcome of one failed upstream attempt. */
export interface AttemptFailure {
  failureClass: FailureClass
  scope: FailureScope
  /** HTTP status of the upstream answer; 0 when there was none (network error, timeout, cancel). */
  status: number
  /** How long the provider asked us to wait before trying again, in ms; null when it said nothing. */
  waitHintMs: number | null
  /** The provider's own words, as close to verbatim as its body allows. */
  message: string
  /** The provider's own error code or type (`invalid_api_key`, `authentication_error`), when it gave one. */
  code: string | null
}

/** The failure classes that hold a key (reference: "What holds a key"): every one but `rate_limit` also ends the key for the request. */
export const HOLD_REASONS = ['credential', 'quota', 'model_access', 'model_gone', 'region_blocked', 'rate_limit'] as const satisfies readonly FailureClass[]

/** Why a key is held: one of the refusing failure classes. */
export type HoldReason = (typeof HOLD_REASONS)[number]

/** True when `value` is a failure class that holds a key. */
export function isHoldReason(value: string): value is HoldReason {
  return (HOLD_REASONS as readonly string[]).includes(value)
}

/** True when the key that got this failure must not be tried again for the same request. */
export function killsKeyForRequest(failureClass: FailureClass): boolean {
  return failureClass !== 'rate_limit' && isHoldReason(failureClass)
}

/** True when a failure of this class may count against a key's health (caller faults, a context too long and cancels never do). */
export function countsAgainstKey(failureClass: FailureClass): boolean {
  return failureClass !== 'caller_fault' && failureClass !== 'context_length' && failureClass !== 'cancelled'
}

/** A failure as routing acts on it (reference: "What holds a key"): a 5xx refusal other than a rate limit is transient; a 402 is the whole key's quota. */
export function routingFailure(failure: AttemptFailure): AttemptFailure {
  const status = failure.status
  if (status >= 500 && status < 600 && killsKeyForRequest(failure.failureClass)) {
    return { ...failure, failureClass: 'transient', scope: 'model' }
  }
  if (status === 402 && failure.failureClass !== 'credential' && (failure.failureClass !== 'quota' || failure.scope !== 'key')) {
    return { ...failure, failureClass: 'quota', scope: 'key' }
  }
  return failure
}
