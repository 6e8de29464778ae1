import { describe, expect, it } from 'vitest'
import { readRateLimitExhaustion } from './rate-limit.ts'

const now = Date.parse('2026-11-29T12:00:00Z')

describe('readRateLimitExhaustion', () => {
  it('says nothing while the key has room', () => {
    expect(readRateLimitExhaustion({ 'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-requests': '120ms' }, now)).toBeNull()
    expect(readRateLimitExhaustion({}, now)).toBeNull()
  })

  it('reads an OpenAI-style spent window and its Go-duration reset', () => {
    expect(readRateLimitExhaustion({ 'x-ratelimit-limit-tokens': '30000', 'x-ratelimit-remaining-tokens': '120', 'x-ratelimit-reset-tokens': '6m0s' }, now)).toEqual({ window: 'tokens', remaining: 120, limit: 30000, untilMs: now + 360_000 })
    expect(readRateLimitExhaustion({ 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '2s' }, now)).toMatchObject({ window: 'requests', untilMs: now + 2000 })
  })

  it("reads Anthropic's RFC 3339 resets and picks the later window", () => {
    const headers = {
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': '2026-11-29T12:00:05Z',
      'anthropic-ratelimit-tokens-limit': '40000',
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': '2026-11-29T12:00:40Z',
    }
    expect(readRateLimitExhaustion(headers, now)).toEqual({ window: 'tokens', remaining: 0, limit: 40000, untilMs: now + 40_000 })
  })

  it('ignores a spent window without a usable reset', () => {
    expect(readRateLimitExhaustion({ 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': 'soon' }, now)).toBeNull()
    expect(readRateLimitExhaustion({ 'anthropic-ratelimit-tokens-remaining': '0', 'anthropic-ratelimit-tokens-reset': '2026-11-29T11:00:00Z' }, now)).toBeNull()
  })
})
