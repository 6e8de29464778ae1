/**
 * Key rotation within one provider for one request (reference/retries-and-fallbacks.txt):
 * transient -> the same key after backoff; rate_limit -> another key after backoff; a refusal
 * that kills the key -> rotate at once; caller_fault -> stop; context_length -> stop this target.
 * A move to an untried key is free: only attempts on keys already tried spend max_retries.
 * Issue 35: no answer at all moves to another key (or target) first, and a short Retry-After on
 * a key nothing else can replace is waited out once.
 */
import { killsKeyForRequest, type AttemptFailure } from '../failures/failure-class.ts'
import { backoffDelay, DEFAULT_RETRY_AFTER_MAX_MS, type RetryPolicy } from './backoff.ts'
import { firstAbove } from '../selection/weighted.ts'

/** Why rotation stopped trying this provider. `retries_exhausted` with keys only waiting is a rate limit for the caller. */
export type RotationStopReason =
  /** The caller's request is at fault: answer at once, no retry, no fallback. */
  | 'caller_fault'
  /** The request is longer than the model's context here: this target ends, a fallback may take it. */
  | 'context_length'
  /** Every key of the provider is dead for this request: 502 upstream_credentials_exhausted. */
  | 'credentials_exhausted'
  /** max_retries spent, or every key left asked for a wait longer than the backoff. */
  | 'retries_exhausted'
  | 'cancelled'
  /** The provider has no key that serves the model. */
  | 'no_keys'

/** Why an attempt uses the key it uses: the first of the target, the same key again, or another key. */
export type AttemptWhy = 'first' | 'retry' | 'rotate'

/** What to do next: send an attempt with a key after a delay, or stop. */
export type RotationStep =
  | { kind: 'attempt'; keyIndex: number; delayMs: number; why: AttemptWhy }
  | { kind: 'stop'; reason: RotationStopReason }

/** What rotation needs to know about a failed attempt (`status` 0: no answer came at all, a reset, a refused connection). */
export type RotationFailure = Pick<AttemptFailure, 'failureClass' | 'waitHintMs'> & Partial<Pick<AttemptFailure, 'status'>>

export interface KeyRotationInit {
  /** The selection weight of each key, in the caller's order; attempts name keys by index here. */
  weights: readonly number[]
  policy: RetryPolicy
  /** Uniform in [0, 1); injected so tests are exact. */
  random: () => number
  /** Keys this request must not use, dead for it (held for a refusal that kills the key). */
  unavailable?: readonly number[]
  /** Keys this request must not use that are not dead (rate limited, backed off): the end is a 429, not a 502. */
  waiting?: readonly number[]
  /** The key of the first attempt (a held key's check, or a session's key), instead of a weighted draw; -1 or undefined for a draw. */
  first?: number | undefined
  /** A key this request checks: one attempt only, then it is done for the request (reference: "Checking a held key again"). */
  once?: number | undefined
  /** The key to go to right after the `once` key (a session's own key, lent to the check): its cache stays warm. */
  then?: number | undefined
  /** Running sums of the positive `weights`, when every key not available weighs 0: the first draw is a binary search. */
  cumulative?: Float64Array | undefined
  /** True when another target (a fallback, another provider) can take the request after this one. */
  alternatives?: boolean
}

const enum KeyStatus {
  Untried = 0,
  Tried = 1,
  /** The provider asked for a wait longer than our backoff, or the key is held for a rate limit / backed off. */
  Waiting = 2,
  Dead = 3,
  /** A check that failed without killing the key: not tried again within the request. */
  Done = 4,
}

/** Plans the attempts of one request on one provider (a class: closures per request measured as microseconds). */
export class KeyRotation {
  /** Index of the key of the current attempt (-1 before first()). */
  current = -1
  private readonly weights: readonly number[]
  private readonly policy: RetryPolicy
  private readonly random: () => number
  private readonly firstKey: number | undefined
  private readonly once: number
  private readonly then: number
  private readonly status: Uint8Array
  private readonly cumulative: Float64Array | undefined
  private retriesUsed = 0
  private backoffs = 0
  private readonly alternatives: boolean
  /** Keys whose Retry-After this request already waited out once (made on first use). */
  private honoured: Uint8Array | null = null

  constructor(init: KeyRotationInit) {
    this.weights = init.weights
    this.policy = init.policy
    this.random = init.random
    this.firstKey = init.first !== undefined && init.first >= 0 ? init.first : undefined
    this.once = init.once ?? -1
    this.then = init.then ?? -1
    this.status = new Uint8Array(init.weights.length)
    this.cumulative = init.cumulative
    this.alternatives = init.alternatives === true
    for (const index of init.unavailable ?? []) this.status[index] = KeyStatus.Dead
    for (const index of init.waiting ?? []) this.status[index] = KeyStatus.Waiting
  }

  /** True when some key is left waiting (not dead) for this request: the end is a rate limit, not dead credentials. */
  get waiting(): boolean {
    return this.status.includes(KeyStatus.Waiting)
  }

  /** The first attempt. */
  first(): RotationStep {
    if (this.weights.length === 0) return { kind: 'stop', reason: 'no_keys' }
    const first = this.firstKey
    if (first !== undefined && this.status[first] === KeyStatus.Untried) return this.attempt(first, 0, 'first')
    const picked = this.cumulative !== undefined ? this.drawCumulative(this.cumulative) : this.pickAmong(KeyStatus.Untried, -1)
    return picked < 0 ? this.stop() : this.attempt(picked, 0, 'first')
  }

  /** The step after the current attempt failed. */
  next(failure: RotationFailure): RotationStep {
    const failureClass = failure.failureClass
    if (failureClass === 'cancelled') return { kind: 'stop', reason: 'cancelled' }
    if (failureClass === 'caller_fault') return { kind: 'stop', reason: 'caller_fault' }
    if (failureClass === 'context_length') return { kind: 'stop', reason: 'context_length' }
    if (killsKeyForRequest(failureClass)) {
      this.status[this.current] = KeyStatus.Dead
      return this.afterOnce(0) ?? this.rotate(0, false)
    }
    if (this.current === this.once) {
      // A check is one attempt: whatever it said, the key is not tried again in this request.
      this.status[this.current] = failureClass === 'rate_limit' ? KeyStatus.Waiting : KeyStatus.Done
      const delayMs = backoffDelay(this.backoffs++, this.policy, this.random)
      return this.afterOnce(delayMs) ?? this.rotate(delayMs, false)
    }
    const delayMs = backoffDelay(this.backoffs, this.policy, this.random)
    const hint = failure.waitHintMs
    const hintTooLong = hint !== null && hint > delayMs
    this.backoffs++
    if (hintTooLong) {
      // A short wait the provider asks for on a key nothing else can replace: wait it out, once.
      const current = this.current
      if (hint <= (this.policy.retryAfterMaxMs ?? DEFAULT_RETRY_AFTER_MAX_MS) && this.retriesUsed < this.policy.maxRetries && !this.hasOther() && this.honoured?.[current] !== 1) {
        ;(this.honoured ??= new Uint8Array(this.status.length))[current] = 1
        this.retriesUsed++
        return this.attempt(current, hint, 'retry')
      }
      this.status[current] = KeyStatus.Waiting
    }
    if (failureClass === 'rate_limit' || hintTooLong) {
      // Prefer another key; come back to this one only when nothing else is left.
      return this.rotate(delayMs, true)
    }
    if (failureClass === 'timeout' || (failureClass === 'transient' && failure.status === 0)) {
      // No answer at all: trying the same key again costs another deadline. Another key first,
      // then the next target; the same key only when nothing else can take the request.
      const moved = this.moveOff(0)
      if (moved !== null) return moved
      if (this.alternatives) return this.stop()
    }
    // transient, timeout, unknown: the answer says nothing about the key, so stay on it.
    return this.retry(this.current, delayMs, 'retry') ?? this.stop()
  }

  /** Right after the `once` key: the `then` key (a session's own), when it is still untried; null otherwise. */
  private afterOnce(delayMs: number): RotationStep | null {
    const then = this.then
    if (this.current !== this.once || then < 0 || this.status[then] !== KeyStatus.Untried) return null
    return this.attempt(then, delayMs, 'rotate')
  }

  /** True when a key other than the current one could still take an attempt. */
  private hasOther(): boolean {
    for (let index = 0; index < this.status.length; index++) {
      if (index === this.current) continue
      const status = this.status[index]
      if (status === KeyStatus.Untried || (status === KeyStatus.Tried && this.retriesUsed < this.policy.maxRetries)) return true
    }
    return false
  }

  /** A weighted draw among the keys in status `wanted` (but not `exclude`), as `pickWeighted` (test/pick-weighted.ts) draws that subset; -1 for none. */
  private pickAmong(wanted: KeyStatus, exclude: number): number {
    const { weights, status } = this
    let count = 0
    let only = -1
    let total = 0
    for (let index = 0; index < weights.length; index++) {
      if (index === exclude || status[index] !== wanted) continue
      count++
      only = index
      const weight = weights[index]!
      if (weight > 0) total += weight
    }
    if (count <= 1) return only
    // Nothing weighted: a uniform draw, each key counting 1 (subtracting 1 is exact: the n-th is floor(draw * count)).
    const uniform = total <= 0
    let target = this.random() * (uniform ? count : total)
    let lastPositive = -1
    for (let index = 0; index < weights.length; index++) {
      if (index === exclude || status[index] !== wanted) continue
      const weight = uniform ? 1 : weights[index]!
      if (weight <= 0) continue
      lastPositive = index
      target -= weight
      if (target < 0) return index
    }
    // Floating point can leave target at ~0 after the last positive weight.
    return lastPositive
  }

  /** The first draw with every key available: as `pickAmong` draws, by binary search over the running sums. */
  private drawCumulative(cumulative: Float64Array): number {
    const total = cumulative[cumulative.length - 1] ?? 0
    // One key, or nothing weighted (a uniform draw): as pickAmong draws it.
    if (cumulative.length <= 1 || total <= 0) return this.pickAmong(KeyStatus.Untried, -1)
    const target = this.random() * total
    let low = firstAbove(cumulative, target)
    // Rounding can leave the target at the very top: step back onto the last positive weight.
    if (cumulative[low]! <= target) while (low > 0 && this.weights[low]! <= 0) low--
    return low
  }

  private attempt(keyIndex: number, delayMs: number, why: AttemptWhy): RotationStep {
    this.current = keyIndex
    this.status[keyIndex] = KeyStatus.Tried
    return { kind: 'attempt', keyIndex, delayMs, why }
  }

  /** Moves off the current key (untried: free; tried: a retry), the current key the last resort when `includeCurrent`. */
  private rotate(delayMs: number, includeCurrent: boolean): RotationStep {
    const moved = this.moveOff(delayMs)
    if (moved !== null) return moved
    if (includeCurrent && this.status[this.current] === KeyStatus.Tried) return this.retry(this.current, delayMs, 'retry') ?? this.stop()
    return this.stop()
  }

  /** An attempt on a key already tried, when a retry is left (it spends one); null otherwise. */
  private retry(keyIndex: number, delayMs: number, why: 'retry' | 'rotate'): RotationStep | null {
    if (this.retriesUsed >= this.policy.maxRetries) return null
    this.retriesUsed++
    return this.attempt(keyIndex, delayMs, why)
  }

  /** To a key not yet tried (free), else to another tried one (a retry); null when there is none. */
  private moveOff(delayMs: number): RotationStep | null {
    const untried = this.pickAmong(KeyStatus.Untried, -1)
    if (untried >= 0) return this.attempt(untried, delayMs, 'rotate')
    // Drawn only while a retry is left: the draw takes a random number.
    const other = this.retriesUsed < this.policy.maxRetries ? this.pickAmong(KeyStatus.Tried, this.current) : -1
    return other >= 0 ? this.retry(other, delayMs, 'rotate') : null
  }

  private stop(): RotationStep {
    return { kind: 'stop', reason: this.status.every((status) => status === KeyStatus.Dead) ? 'credentials_exhausted' : 'retries_exhausted' }
  }
}
