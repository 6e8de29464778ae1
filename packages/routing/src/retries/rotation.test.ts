import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { pickWeighted } from '../../test/pick-weighted.ts'
import { KeyRotation, type RotationStep } from './rotation.ts'
import { backoffDelay } from './backoff.ts'

const policy = { maxRetries: 2, backoffInitialMs: 500, backoffMaxMs: 5000 }
/** A random source that always returns the middle of [0,1): jitter 1.0, and weighted picks are deterministic. */
const middle = () => 0.5

function keys(count: number): number[] {
  return Array.from({ length: count }, () => 1)
}

function attemptOf(step: RotationStep) {
  if (step.kind !== 'attempt') throw new Error(`expected an attempt, got stop ${step.reason}`)
  return step
}

describe('backoffDelay', () => {
  it('doubles from the initial value up to the max, with jitter within 0.8..1.2', () => {
    expect(backoffDelay(0, policy, () => 0)).toBe(400)
    expect(backoffDelay(0, policy, middle)).toBe(500)
    expect(backoffDelay(1, policy, middle)).toBe(1000)
    expect(backoffDelay(3, policy, middle)).toBe(4000)
    expect(backoffDelay(4, policy, middle)).toBe(5000)
    expect(backoffDelay(10, policy, () => 0.999999)).toBeCloseTo(6000, 0)
  })
})

describe('KeyRotation', () => {
  it('retries a transient failure on the same key with backoff, until max_retries', () => {
    const rotation = new KeyRotation({ weights: keys(3), policy, random: middle })
    const first = attemptOf(rotation.first())
    const second = attemptOf(rotation.next({ failureClass: 'transient', waitHintMs: null }))
    expect(second).toMatchObject({ keyIndex: first.keyIndex, delayMs: 500, why: 'retry' })
    const third = attemptOf(rotation.next({ failureClass: 'transient', waitHintMs: null }))
    expect(third).toMatchObject({ keyIndex: first.keyIndex, delayMs: 1000 })
    expect(rotation.next({ failureClass: 'transient', waitHintMs: null })).toEqual({ kind: 'stop', reason: 'retries_exhausted' })
  })

  it('rotates a rate-limited request to another key, still with backoff', () => {
    const rotation = new KeyRotation({ weights: keys(2), policy, random: middle })
    const first = attemptOf(rotation.first())
    const second = attemptOf(rotation.next({ failureClass: 'rate_limit', waitHintMs: null }))
    expect(second.keyIndex).not.toBe(first.keyIndex)
    expect(second.delayMs).toBe(500)
  })

  it('rotates at once off a dead key, and rotation to untried keys is not capped by max_retries', () => {
    const rotation = new KeyRotation({ weights: keys(6), policy: { ...policy, maxRetries: 0 }, random: middle })
    const seen = new Set<number>([attemptOf(rotation.first()).keyIndex])
    for (let index = 0; index < 5; index++) {
      const step = attemptOf(rotation.next({ failureClass: 'credential', waitHintMs: null }))
      expect(step.delayMs).toBe(0)
      expect(seen.has(step.keyIndex)).toBe(false)
      seen.add(step.keyIndex)
    }
    expect(rotation.next({ failureClass: 'quota', waitHintMs: null })).toEqual({ kind: 'stop', reason: 'credentials_exhausted' })
  })

  it('stops at once on a caller fault and on a cancel', () => {
    const rotation = new KeyRotation({ weights: keys(3), policy, random: middle })
    rotation.first()
    expect(rotation.next({ failureClass: 'caller_fault', waitHintMs: null })).toEqual({ kind: 'stop', reason: 'caller_fault' })
    const other = new KeyRotation({ weights: keys(3), policy, random: middle })
    other.first()
    expect(other.next({ failureClass: 'cancelled', waitHintMs: null })).toEqual({ kind: 'stop', reason: 'cancelled' })
  })

  it('does not wait on a key whose wait hint is longer than the backoff: rotates instead', () => {
    const rotation = new KeyRotation({ weights: keys(2), policy, random: middle })
    const first = attemptOf(rotation.first())
    const second = attemptOf(rotation.next({ failureClass: 'transient', waitHintMs: 30_000 }))
    expect(second.keyIndex).not.toBe(first.keyIndex)
    // The other key fails the same way: nothing left that is not waiting.
    expect(rotation.next({ failureClass: 'rate_limit', waitHintMs: 30_000 })).toEqual({ kind: 'stop', reason: 'retries_exhausted' })
  })

  it('with a single key, a rate limit with a short hint retries that key, a long hint gives up', () => {
    const short = new KeyRotation({ weights: keys(1), policy, random: middle })
    short.first()
    expect(attemptOf(short.next({ failureClass: 'rate_limit', waitHintMs: 100 }))).toMatchObject({ keyIndex: 0, why: 'retry' })
    const long = new KeyRotation({ weights: keys(1), policy, random: middle })
    long.first()
    expect(long.next({ failureClass: 'rate_limit', waitHintMs: 60_000 })).toEqual({ kind: 'stop', reason: 'retries_exhausted' })
  })

  it('waits out a Retry-After up to retryAfterMaxMs once on a key nothing else can replace, then fails over', () => {
    const rotation = new KeyRotation({ weights: keys(1), policy, random: middle })
    rotation.first()
    // 2 s asked, longer than the 500 ms backoff but within the 5 s default: the same key, after 2 s.
    expect(attemptOf(rotation.next({ failureClass: 'rate_limit', waitHintMs: 2_000 }))).toMatchObject({ keyIndex: 0, delayMs: 2_000, why: 'retry' })
    // Asked again: a persistent 429 is not waited out twice; the target gives up (the fallback runs).
    expect(rotation.next({ failureClass: 'rate_limit', waitHintMs: 2_000 })).toEqual({ kind: 'stop', reason: 'retries_exhausted' })
    expect(rotation.waiting).toBe(true)
  })

  it('does not wait out a Retry-After longer than retryAfterMaxMs, nor one on a key another key can replace', () => {
    const capped = new KeyRotation({ weights: keys(1), policy: { ...policy, retryAfterMaxMs: 1_000 }, random: middle })
    capped.first()
    expect(capped.next({ failureClass: 'rate_limit', waitHintMs: 2_000 })).toEqual({ kind: 'stop', reason: 'retries_exhausted' })
    const two = new KeyRotation({ weights: keys(2), policy, random: middle })
    const first = attemptOf(two.first())
    const second = attemptOf(two.next({ failureClass: 'rate_limit', waitHintMs: 2_000 }))
    expect(second.keyIndex).not.toBe(first.keyIndex)
    expect(second.delayMs).toBe(500)
  })

  it('moves off a key that gave no answer (a deadline, a reset) before trying it again', () => {
    for (const failure of [{ failureClass: 'timeout' as const, waitHintMs: null, status: 0 }, { failureClass: 'transient' as const, waitHintMs: null, status: 0 }]) {
      // Another key: straight to it, no backoff.
      const two = new KeyRotation({ weights: keys(2), policy, random: middle })
      const first = attemptOf(two.first())
      expect(attemptOf(two.next(failure))).toMatchObject({ keyIndex: 1 - first.keyIndex, delayMs: 0, why: 'rotate' })
      // One key and a fallback after this target: the target ends, the fallback runs.
      const single = new KeyRotation({ weights: keys(1), policy, random: middle, alternatives: true })
      single.first()
      expect(single.next(failure)).toEqual({ kind: 'stop', reason: 'retries_exhausted' })
      // One key and nothing else: the same key again, after the backoff.
      const alone = new KeyRotation({ weights: keys(1), policy, random: middle })
      alone.first()
      expect(attemptOf(alone.next(failure))).toMatchObject({ keyIndex: 0, delayMs: 500, why: 'retry' })
    }
    // A 5xx that did answer stays on its key, as before, fallback or not.
    const answered = new KeyRotation({ weights: keys(2), policy, random: middle, alternatives: true })
    const first = attemptOf(answered.first())
    expect(attemptOf(answered.next({ failureClass: 'transient', waitHintMs: null, status: 503 }))).toMatchObject({ keyIndex: first.keyIndex, why: 'retry' })
  })

  it('with three keys and max_retries 5, cycles through the keys on rate limits and then stops', () => {
    const rotation = new KeyRotation({ weights: keys(3), policy: { ...policy, maxRetries: 5 }, random: Math.random })
    let attempts = 1
    rotation.first()
    while (rotation.next({ failureClass: 'rate_limit', waitHintMs: null }).kind === 'attempt') attempts++
    // 3 free first tries of each key + 5 retries.
    expect(attempts).toBe(8)
  })

  it('says no_keys when there is no key', () => {
    expect(new KeyRotation({ weights: [], policy, random: middle }).first()).toEqual({ kind: 'stop', reason: 'no_keys' })
  })

  it('a dead key is never picked again, even once the retries are spent on the others', () => {
    const rotation = new KeyRotation({ weights: keys(2), policy: { ...policy, maxRetries: 3 }, random: Math.random })
    const dead = attemptOf(rotation.first()).keyIndex
    let step = rotation.next({ failureClass: 'model_gone', waitHintMs: null })
    while (step.kind === 'attempt') {
      expect(step.keyIndex).not.toBe(dead)
      step = rotation.next({ failureClass: 'transient', waitHintMs: null })
    }
    expect(step).toEqual({ kind: 'stop', reason: 'retries_exhausted' })
  })

  it('starts on the given first key and never uses an unavailable one', () => {
    const rotation = new KeyRotation({ weights: keys(3), policy, random: Math.random, unavailable: [1], first: 2 })
    expect(attemptOf(rotation.first()).keyIndex).toBe(2)
    expect(attemptOf(rotation.next({ failureClass: 'credential', waitHintMs: null })).keyIndex).toBe(0)
    expect(rotation.next({ failureClass: 'credential', waitHintMs: null })).toEqual({ kind: 'stop', reason: 'credentials_exhausted' })
  })

  it('stops at once when every key is unavailable', () => {
    expect(new KeyRotation({ weights: keys(2), policy, random: middle, unavailable: [0, 1] }).first()).toEqual({ kind: 'stop', reason: 'credentials_exhausted' })
  })

  it('draws the first key exactly as pickWeighted draws over the keys it may use', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant(0), fc.constant(1), fc.double({ min: 0.01, max: 10, noNaN: true })), { minLength: 1, maxLength: 8 }),
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (weights, blocked, draw) => {
          const unavailable = weights.map((_, index) => index).filter((index) => blocked[index])
          const usable = weights.map((_, index) => index).filter((index) => !blocked[index])
          const step = new KeyRotation({ weights, policy, random: () => draw, unavailable }).first()
          if (usable.length === 0) {
            expect(step).toEqual({ kind: 'stop', reason: 'credentials_exhausted' })
          } else {
            const expected = usable[pickWeighted(usable.map((index) => weights[index]!), () => draw)]
            expect(attemptOf(step).keyIndex).toBe(expected)
          }
        },
      ),
      { numRuns: 1000 },
    )
  })
})

describe('the first draw over running sums', () => {
  it('picks the same key as the two-pass draw, for every draw and any weights', () => {
    const policy = { maxRetries: 1, backoffInitialMs: 1, backoffMaxMs: 1 }
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 5, noNaN: true })), { minLength: 1, maxLength: 60 }), fc.double({ min: 0, max: 0.9999999, noNaN: true }), (weights, draw) => {
        const cumulative = new Float64Array(weights.length)
        let total = 0
        weights.forEach((weight, index) => {
          if (weight > 0) total += weight
          cumulative[index] = total
        })
        const plain = new KeyRotation({ weights, policy, random: () => draw }).first()
        const summed = new KeyRotation({ weights, policy, random: () => draw, cumulative }).first()
        expect(summed).toEqual(plain)
        expect(summed).toMatchObject({ keyIndex: pickWeighted(weights, () => draw) })
      }),
      { numRuns: 2000 },
    )
  })

  it('picks the same key as the two-pass draw with weightless keys left out', () => {
    const policy = { maxRetries: 1, backoffInitialMs: 1, backoffMaxMs: 1 }
    fc.assert(
      fc.property(fc.array(fc.record({ weight: fc.integer({ min: 0, max: 50 }), out: fc.boolean(), dead: fc.boolean() }), { minLength: 1, maxLength: 60 }), fc.double({ min: 0, max: 0.9999999, noNaN: true }), (keys, draw) => {
        const weights = keys.map((key) => (key.out ? 0 : key.weight))
        const unavailable = keys.flatMap((key, index) => (key.out && key.dead ? [index] : []))
        const waiting = keys.flatMap((key, index) => (key.out && !key.dead ? [index] : []))
        const cumulative = new Float64Array(weights.length)
        let total = 0
        weights.forEach((weight, index) => {
          total += weight
          cumulative[index] = total
        })
        const plain = new KeyRotation({ weights, policy, random: () => draw, unavailable, waiting }).first()
        const summed = new KeyRotation({ weights, policy, random: () => draw, unavailable, waiting, cumulative }).first()
        expect(summed).toEqual(plain)
      }),
      { numRuns: 2000 },
    )
  })
})
