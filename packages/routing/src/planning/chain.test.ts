import { describe, expect, it } from 'vitest'
import { attemptDeadlines, DEFAULT_FIRST_TOKEN_MS, DEFAULT_STREAM_IDLE_MS, endsChain, mayContinue, MAX_CONTINUATIONS, retryAfterMs } from './chain.ts'
import type { KeyPlan } from './types.ts'

describe('endsChain', () => {
  it('stops the chain when the caller left, or when the primary says the request is wrong; a fallback\'s caller fault ends that fallback only', () => {
    expect(endsChain('cancelled', false)).toBe(true)
    expect(endsChain('caller_fault', true)).toBe(true)
    expect(endsChain('caller_fault', false)).toBe(false)
    for (const reason of ['retries_exhausted', 'credentials_exhausted', 'no_keys'] as const) expect(endsChain(reason, true)).toBe(false)
  })
})

describe('retryAfterMs', () => {
  const plan = (leftOut: KeyPlan['leftOut']): KeyPlan => ({ weights: [1, 1], leftOut, first: -1, check: -1, checkDue: false, everyKeyHeld: false })
  it('is the earliest waiting key, or a shorter rate-limit hint; dead keys and other failures say nothing', () => {
    const waiting = plan([{ index: 0, keyId: 'a', keyName: 'a', reason: 'backed_off', dead: false, until: 11_000 }, { index: 1, keyId: 'b', keyName: 'b', reason: 'held', dead: true, until: 2_000 }])
    expect(retryAfterMs(waiting, null, 1_000)).toBe(10_000)
    expect(retryAfterMs(waiting, { failureClass: 'rate_limit', scope: 'model', status: 429, waitHintMs: 3_000, message: '', code: null }, 1_000)).toBe(3_000)
    expect(retryAfterMs(plan([]), { failureClass: 'transient', scope: 'model', status: 503, waitHintMs: 3_000, message: '', code: null }, 1_000)).toBeNull()
  })
})

describe('attemptDeadlines', () => {
  it('takes the request\'s, then the provider\'s, then the defaults; the default first-token deadline only while something else could serve', () => {
    expect(attemptDeadlines({ requestMs: 30_000 }, undefined, true)).toEqual({ requestMs: 30_000, firstTokenMs: DEFAULT_FIRST_TOKEN_MS, idleMs: DEFAULT_STREAM_IDLE_MS })
    expect(attemptDeadlines({ requestMs: 30_000 }, undefined, false).firstTokenMs).toBeNull()
    // Set by the provider or by the request: it applies on a last resort too.
    expect(attemptDeadlines({ requestMs: 30_000, firstTokenMs: 4_000 }, undefined, false).firstTokenMs).toBe(4_000)
    expect(attemptDeadlines({ requestMs: 30_000, firstTokenMs: 4_000, idleMs: 9_000 }, { firstTokenMs: 1_000, requestMs: 5_000 }, false)).toEqual({ requestMs: 5_000, firstTokenMs: 1_000, idleMs: 9_000 })
  })
})

describe('mayContinue', () => {
  it('continues text at most MAX_CONTINUATIONS times, never what a prefill cannot carry', () => {
    expect(mayContinue(1, true)).toBe('yes')
    expect(mayContinue(MAX_CONTINUATIONS, true)).toBe('yes')
    expect(mayContinue(MAX_CONTINUATIONS + 1, true)).toBe('continued_enough')
    expect(mayContinue(1, false)).toBe('not_continuable')
  })
})
