import { describe, expect, it } from 'vitest'
import { readErrorReport } from './body.ts'
import { parseDuration, waitHintFromReport } from './wait-hints.ts'

/** The wait hint of one answer, its body read as classifyFailure reads it. */
function parseWaitHint(headers: Record<string, string>, body: unknown, now: number, options: { rateLimitResets?: boolean } = {}): number | null {
  return waitHintFromReport(headers, readErrorReport(headers, body), now, options.rateLimitResets ?? true)
}

const now = Date.parse('2025-06-02T12:00:00.000Z')
const noBody = ''

describe('parseDuration', () => {
  it.each([
    ['1m30s', 90_000],
    ['250ms', 250],
    ['6m0s', 360_000],
    ['0.5s', 500],
    ['2h1m', 7_260_000],
    ['1.234s', 1234],
    ['2m59.56s', 179_560],
    ['500us', 0.5],
    ['0', 0],
    [' 20s ', 20_000],
  ])('%s -> %d ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected)
  })

  it.each(['', 'soon', '-5s', '5', '1m30', 's', '1.5.5s', '10 s', '3d'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeNull()
  })
})

describe('parseWaitHint sources', () => {
  it('reads retry-after-ms, fractional, rounded up', () => {
    expect(parseWaitHint({ 'retry-after-ms': '1500.2' }, noBody, now)).toBe(1501)
  })

  it('reads retry-after as integer or decimal seconds', () => {
    expect(parseWaitHint({ 'retry-after': '30' }, noBody, now)).toBe(30_000)
    expect(parseWaitHint({ 'retry-after': '1.5' }, noBody, now)).toBe(1500)
    expect(parseWaitHint({ 'retry-after': '0' }, noBody, now)).toBe(0)
  })

  it('reads retry-after as an HTTP date relative to now', () => {
    expect(parseWaitHint({ 'retry-after': 'Mon, 02 Jun 2025 12:00:45 GMT' }, noBody, now)).toBe(45_000)
  })

  it('prefers retry-after-ms over retry-after over the reset headers', () => {
    const headers = { 'retry-after-ms': '700', 'retry-after': '3', 'x-ratelimit-reset-requests': '9s' }
    expect(parseWaitHint(headers, noBody, now)).toBe(700)
    expect(parseWaitHint({ 'retry-after': '3', 'x-ratelimit-reset-requests': '9s' }, noBody, now)).toBe(3000)
  })

  it('reads OpenAI/Groq reset durations, taking the exhausted window', () => {
    const headers = {
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '1m30s',
      'x-ratelimit-remaining-tokens': '5000',
      'x-ratelimit-reset-tokens': '2h1m',
    }
    expect(parseWaitHint(headers, noBody, now)).toBe(90_000)
  })

  it('takes the larger reset when no window says it is exhausted', () => {
    expect(parseWaitHint({ 'x-ratelimit-reset-requests': '250ms', 'x-ratelimit-reset-tokens': '6m0s' }, noBody, now)).toBe(360_000)
    expect(parseWaitHint({ 'x-ratelimit-reset-tokens': '0.5s' }, noBody, now)).toBe(500)
  })

  it('reads Azure bare-second resets in the same headers', () => {
    expect(parseWaitHint({ 'x-ratelimit-reset-tokens': '12' }, noBody, now)).toBe(12_000)
  })

  it('reads Anthropic RFC 3339 resets relative to now', () => {
    const headers = {
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': '2025-06-02T12:00:25Z',
      'anthropic-ratelimit-requests-remaining': '10',
      'anthropic-ratelimit-requests-reset': '2025-06-02T12:00:59Z',
    }
    expect(parseWaitHint(headers, noBody, now)).toBe(25_000)
    expect(parseWaitHint({ 'anthropic-ratelimit-output-tokens-reset': '2025-06-02T12:00:03.5Z' }, noBody, now)).toBe(3500)
  })

  it('skips the reset headers when asked to', () => {
    expect(parseWaitHint({ 'x-ratelimit-reset-requests': '9s' }, noBody, now, { rateLimitResets: false })).toBeNull()
    expect(parseWaitHint({ 'retry-after': '4' }, noBody, now, { rateLimitResets: false })).toBe(4000)
  })

  it('reads a Gemini RetryInfo delay', () => {
    const body = (retryDelay: unknown) => ({
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        message: 'quota',
        details: [{ '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [] }, { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }],
      },
    })
    expect(parseWaitHint({}, body('37s'), now)).toBe(37_000)
    expect(parseWaitHint({}, body('1.5s'), now)).toBe(1500)
    expect(parseWaitHint({}, body({ seconds: '2', nanos: 500_000_000 }), now)).toBe(2500)
  })

  it.each([
    ['Rate limit reached. Please try again in 20s. Visit the docs.', 20_000],
    ['Please retry in 1.234s', 1234],
    ['Limit 30000. Please try again in 6ms.', 6],
    ['Please try again in 7m12s.', 432_000],
    ['Please retry after 7 seconds. Please go here', 7000],
    ['Rate limit is exceeded. Try again in 2 seconds.', 2000],
  ])('reads the wording %j', (message, expected) => {
    expect(parseWaitHint({}, { error: { message, type: 'requests', code: 'rate_limit_exceeded' } }, now)).toBe(expected)
  })

  it('reads the wording of a plain-text body', () => {
    expect(parseWaitHint({}, 'Too many requests. Try again in 3 minutes.', now)).toBe(180_000)
  })
})

describe('parseWaitHint ignores what it cannot use', () => {
  it('returns null when nothing says how long', () => {
    expect(parseWaitHint({}, noBody, now)).toBeNull()
    expect(parseWaitHint({ 'content-type': 'application/json' }, { error: { message: 'Overloaded' } }, now)).toBeNull()
  })

  it.each([
    [{ 'retry-after': '-5' }],
    [{ 'retry-after': 'soon' }],
    [{ 'retry-after': 'Mon, 02 Jun 2025 11:59:00 GMT' }],
    [{ 'retry-after-ms': 'NaN' }],
    [{ 'retry-after-ms': '-100' }],
    [{ 'x-ratelimit-reset-requests': 'later' }],
    [{ 'x-ratelimit-reset-tokens': '-3s' }],
    [{ 'anthropic-ratelimit-requests-reset': '2025-06-02T11:59:00Z' }],
    [{ 'anthropic-ratelimit-requests-reset': 'tomorrow' }],
  ])('ignores garbage %j', (headers) => {
    expect(parseWaitHint(headers, noBody, now)).toBeNull()
  })

  it('falls through an unusable source to the next one', () => {
    expect(parseWaitHint({ 'retry-after': 'soon', 'x-ratelimit-reset-tokens': '4s' }, noBody, now)).toBe(4000)
    const retryInfo = { error: { message: 'Please try again in 8s', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: 'x' }] } }
    expect(parseWaitHint({}, retryInfo, now)).toBe(8000)
  })
})
