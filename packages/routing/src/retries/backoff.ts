/** Retry timing. Spec: reference/retries-and-fallbacks.txt ("How Retries and Key Rotation Keep Requests Alive"). */

/** A provider's retry budget and backoff bounds (network_config). */
export interface RetryPolicy {
  /** Retries of a key already tried; rotation to untried keys is free. */
  maxRetries: number
  backoffInitialMs: number
  backoffMaxMs: number
  /** The longest Retry-After waited out on a key no other can replace; longer asks move on. Default DEFAULT_RETRY_AFTER_MAX_MS. */
  retryAfterMaxMs?: number
}

/** Defaults of the reference product: 500 ms initial, 5000 ms max. */
export const DEFAULT_BACKOFF_INITIAL_MS = 500
export const DEFAULT_BACKOFF_MAX_MS = 5000
/** A Retry-After up to this long is waited out on a key nothing else can replace (network_config.max_retry_after_in_seconds). */
export const DEFAULT_RETRY_AFTER_MAX_MS = 5000

/** The wait before retry number `attempt` (0-based): min(initial * 2^attempt, max) * a jitter in [0.8, 1.2). */
export function backoffDelay(attempt: number, policy: RetryPolicy, random: () => number): number {
  const base = Math.min(policy.backoffInitialMs * 2 ** Math.max(0, attempt), policy.backoffMaxMs)
  return base * (0.8 + 0.4 * random())
}
