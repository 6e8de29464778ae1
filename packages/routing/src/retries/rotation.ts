/**
 * Key rotation within one provider for one request.
 * Spec: reference/retries-and-fallbacks.txt. transient -> the same key after backoff;
 * rate_limit -> another key after backoff; credential, quota, model_access, model_gone,
 * region_blocked -> the key is dead for this request, rotate at once; caller_fault -> stop.
 * A move to a key not yet tried is free: only attempts on keys already tried spend
 * max_retries, so a provider with many keys is never given up early.
 */
import { killsKeyForRequest, type FailureClass } from '../failures/failure-class.ts'
import { backoffDelay, type RetryPolicy } from './backoff.ts'
import { pickWeighted } from '../selection/weighted.ts'

/** A key as rotation sees it: its index in the caller's list and its selection weight. */
export interface RotationKey {
  weight: number
}

/** Why rotation stopped trying this provider. */
export type RotationStopReason =
  /** The caller's request is at fault: answer at once, no retry, no fallback. */
  | 'caller_fault'
  /** Every key of the provider is dead for this request: 502 upstream_credentials_exhausted. */
  | 'credentials_exhausted'
  /** max_retries spent, or every key left asked for a wait longer than the backoff. */
  | 'retries_exhausted'
  | 'cancelled'
  /** The provider has no key that serves the model. */
  | 'no_keys'

/** What to do next: send an attempt with a key after a delay, or stop. */
export type RotationStep =
  | { kind: 'attempt'; keyIndex: number; delayMs: number; why: 'first' | 'retry' | 'rotate' }
  | { kind: 'stop'; reason: RotationStopReason }

/** What rotation needs to know about a failed attempt. */
export interface RotationFailure {
  failureClass: FailureClass
  waitHintMs: number | null
}

/** Plans the attempts of one request on one provider. */
export interface KeyRotation {
  /** The first attempt. */
  first(): RotationStep
  /** The step after the current attempt failed. */
  next(failure: RotationFailure): RotationStep
  /** Index of the key of the current attempt (-1 before first()). */
  readonly current: number
}

export interface KeyRotationInit {
  keys: readonly RotationKey[]
  policy: RetryPolicy
  /** Uniform in [0, 1); injected so tests are exact. */
  random: () => number
  /** Keys this request must not use (held keys it is not checking): treated as already dead. */
  unavailable?: readonly number[]
  /** The key of the first attempt (a held key's check, or a session's key), instead of a weighted draw. */
  first?: number
}

const enum KeyStatus {
  Untried = 0,
  Tried = 1,
  /** The provider asked for a wait longer than our backoff: leave it for this request. */
  Waiting = 2,
  Dead = 3,
}

/** Creates the rotation plan of one request on one provider. */
export function createKeyRotation(init: KeyRotationInit): KeyRotation {
  const { keys, policy, random } = init
  const status = new Uint8Array(keys.length)
  for (const index of init.unavailable ?? []) status[index] = KeyStatus.Dead
  let current = -1
  let retriesUsed = 0
  let backoffs = 0

  const pickAmong = (wanted: KeyStatus, exclude: number): number => {
    const indexes: number[] = []
    const weights: number[] = []
    for (let index = 0; index < keys.length; index++) {
      if (index === exclude || status[index] !== wanted) continue
      indexes.push(index)
      weights.push(keys[index]!.weight)
    }
    const picked = pickWeighted(weights, random)
    return picked < 0 ? -1 : indexes[picked]!
  }

  const attempt = (keyIndex: number, delayMs: number, why: 'first' | 'retry' | 'rotate'): RotationStep => {
    current = keyIndex
    status[keyIndex] = KeyStatus.Tried
    return { kind: 'attempt', keyIndex, delayMs, why }
  }

  /**
   * Moves off the current key: an untried key is free, another tried one spends a retry,
   * and the current key itself is the last resort when `includeCurrent`.
   */
  const rotate = (delayMs: number, includeCurrent: boolean): RotationStep => {
    const untried = pickAmong(KeyStatus.Untried, -1)
    if (untried >= 0) return attempt(untried, delayMs, 'rotate')
    if (retriesUsed < policy.maxRetries) {
      const other = pickAmong(KeyStatus.Tried, current)
      if (other >= 0) {
        retriesUsed++
        return attempt(other, delayMs, 'rotate')
      }
      if (includeCurrent && status[current] === KeyStatus.Tried) {
        retriesUsed++
        return attempt(current, delayMs, 'retry')
      }
    }
    return stop()
  }

  const stop = (): RotationStep => {
    for (let index = 0; index < keys.length; index++) {
      if (status[index] !== KeyStatus.Dead) return { kind: 'stop', reason: 'retries_exhausted' }
    }
    return { kind: 'stop', reason: 'credentials_exhausted' }
  }

  return {
    get current() {
      return current
    },
    first() {
      if (keys.length === 0) return { kind: 'stop', reason: 'no_keys' }
      if (init.first !== undefined && status[init.first] === KeyStatus.Untried) return attempt(init.first, 0, 'first')
      const picked = pickAmong(KeyStatus.Untried, -1)
      return picked < 0 ? stop() : attempt(picked, 0, 'first')
    },
    next(failure) {
      const failureClass = failure.failureClass
      if (failureClass === 'cancelled') return { kind: 'stop', reason: 'cancelled' }
      if (failureClass === 'caller_fault') return { kind: 'stop', reason: 'caller_fault' }
      if (killsKeyForRequest(failureClass)) {
        status[current] = KeyStatus.Dead
        return rotate(0, false)
      }
      const delayMs = backoffDelay(backoffs, policy, random)
      const hintTooLong = failure.waitHintMs !== null && failure.waitHintMs > delayMs
      backoffs++
      if (hintTooLong) status[current] = KeyStatus.Waiting
      if (failureClass === 'rate_limit' || hintTooLong) {
        // Prefer another key; come back to this one only when nothing else is left.
        return rotate(delayMs, true)
      }
      // transient, timeout, unknown: the answer says nothing about the key, so stay on it.
      if (retriesUsed < policy.maxRetries) {
        retriesUsed++
        return attempt(current, delayMs, 'retry')
      }
      return stop()
    },
  }
}
