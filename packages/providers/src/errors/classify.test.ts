import { FAILURE_CLASSES } from '@switchboard/routing'
import { describe, expect, it } from 'vitest'
import { cancelledFailure, classifyFailure, networkFailure, timeoutFailure } from './classify.ts'
import { ERROR_FIXTURES, FIXTURE_NOW } from '../../test/fixtures/errors.ts'

describe('classifyFailure on recorded provider errors', () => {
  it.each(ERROR_FIXTURES.map((fixture) => [fixture.name, fixture] as const))('%s', (_name, fixture) => {
    const failure = classifyFailure({ status: fixture.status, headers: fixture.headers, body: fixture.body, now: FIXTURE_NOW })
    expect({ failureClass: failure.failureClass, scope: failure.scope }).toEqual({
      failureClass: fixture.expected.failureClass,
      scope: fixture.expected.scope,
    })
    if (fixture.expected.waitHintMs !== undefined) expect(failure.waitHintMs).toBe(fixture.expected.waitHintMs)
    if (fixture.expected.code !== undefined) expect(failure.code).toBe(fixture.expected.code)
    if (fixture.expected.message !== undefined) expect(failure.message).toBe(fixture.expected.message)
    expect(failure.status).toBe(fixture.status)
  })

  it('has at least 60 fixtures, each with a unique name and a source', () => {
    expect(ERROR_FIXTURES.length).toBeGreaterThanOrEqual(60)
    expect(new Set(ERROR_FIXTURES.map((fixture) => fixture.name)).size).toBe(ERROR_FIXTURES.length)
    for (const fixture of ERROR_FIXTURES) expect(fixture.source.trim()).not.toBe('')
  })

  it('covers every failure class an upstream answer can end in', () => {
    const covered = new Set(ERROR_FIXTURES.map((fixture) => fixture.expected.failureClass))
    const answerClasses = FAILURE_CLASSES.filter((failureClass) => failureClass !== 'timeout' && failureClass !== 'cancelled')
    expect(answerClasses.filter((failureClass) => !covered.has(failureClass))).toEqual([])
  })

  it('says why each fixture gets its class, and marks a Bifrost class only where it differs', () => {
    for (const fixture of ERROR_FIXTURES) {
      expect(fixture.why.trim(), fixture.name).not.toBe('')
      if (fixture.bifrostClass !== undefined) expect(fixture.bifrostClass, fixture.name).not.toBe(fixture.expected.failureClass)
    }
  })

  it('covers both scopes of quota: account-level money and a per-model quota', () => {
    const quotaScopes = new Set(
      ERROR_FIXTURES.filter((fixture) => fixture.expected.failureClass === 'quota').map((fixture) => fixture.expected.scope),
    )
    expect(quotaScopes).toEqual(new Set(['key', 'model']))
  })
})

describe('caller_fault only when the provider says what is wrong with the request', () => {
  const now = FIXTURE_NOW

  it('never classes a wordless 4xx, an HTML page or a wrong-path answer as caller_fault', () => {
    for (const status of [400, 404, 405, 409, 414, 415, 422]) {
      for (const body of ['', null, { error: {} }, '<html><body>Not Found</body></html>']) {
        const failure = classifyFailure({ status, headers: {}, body, now })
        expect(failure.failureClass, `${status} ${JSON.stringify(body)}`).toBe('unknown')
      }
    }
  })

  it('classes a 400 or 422 that names the problem as caller_fault', () => {
    const worded = { error: { message: "Invalid value for 'temperature': must be at most 2.", type: 'invalid_request_error', param: 'temperature', code: null } }
    expect(classifyFailure({ status: 400, headers: {}, body: worded, now }).failureClass).toBe('caller_fault')
    expect(classifyFailure({ status: 422, headers: {}, body: { detail: [{ loc: ['body', 'messages'], msg: 'field required' }] }, now }).failureClass).toBe(
      'caller_fault',
    )
  })

  it('never classes a missing or unusable model as caller_fault, whatever the status', () => {
    const words = ['Invalid model: placeholder-model', 'The model `x` does not exist', 'Unknown model: x', 'Publisher Model is not servable in region r.']
    for (const status of [400, 404, 422]) {
      for (const message of words) {
        const failure = classifyFailure({ status, headers: {}, body: { error: { message, type: 'invalid_request_error' } }, now })
        expect(failure.failureClass, `${status} ${message}`).toBe('model_access')
      }
    }
  })
})

describe('context_length only for a prompt over the model\'s context window', () => {
  const now = FIXTURE_NOW
  const anthropic = (status: number, type: string, message: string) => ({ status, headers: {}, body: { type: 'error', error: { type, message } }, now })

  it('classes each provider\'s words for a prompt over the window as context_length, scope model', () => {
    const words = [
      "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
      'Your input exceeds the context window of this model. Please adjust your input and try again.',
      'prompt is too long: 201000 tokens > 200000 maximum',
      'input length and `max_tokens` exceed context limit: 199000 + 4096 > 200000, decrease input length or `max_tokens` and try again',
      'Input is too long for requested model.',
      'Too many input tokens. Max input tokens: 8192, request input token count: 9000',
      'The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).',
    ]
    for (const message of words) {
      const failure = classifyFailure(anthropic(400, 'invalid_request_error', message))
      expect({ failureClass: failure.failureClass, scope: failure.scope }, message).toEqual({ failureClass: 'context_length', scope: 'model' })
      expect(failure.message).toBe(message)
    }
  })

  it('keeps a body over the size limit in bytes, an output cap and a content filter as caller_fault', () => {
    expect(classifyFailure(anthropic(413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.')).failureClass).toBe('caller_fault')
    expect(classifyFailure(anthropic(400, 'invalid_request_error', 'max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet')).failureClass).toBe('caller_fault')
    const filtered = { error: { message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", type: null, param: 'prompt', code: 'content_filter', status: 400, innererror: { code: 'ResponsibleAIPolicyViolation' } } }
    expect(classifyFailure({ status: 400, headers: {}, body: filtered, now })).toMatchObject({ failureClass: 'caller_fault', message: filtered.error.message })
  })

  it('judges an error after a 2xx (a stream) by its code alone: context_length_exceeded, not the words', () => {
    const body = { error: { message: 'maximum context length exceeded', type: 'invalid_request_error', code: 'context_length_exceeded' } }
    expect(classifyFailure({ status: 200, headers: {}, body, now }).failureClass).toBe('context_length')
    expect(classifyFailure({ status: 200, headers: {}, body: { error: { message: 'prompt is too long: 3 tokens > 2 maximum' } }, now }).failureClass).toBe('unknown')
  })
})

describe('classifyFailure messages and codes', () => {
  const now = FIXTURE_NOW

  it('keeps the provider message verbatim, including its own redaction of the key', () => {
    const message = 'Incorrect API key provided: sk-abc***wxyz. You can find your API key at https://platform.openai.com/account/api-keys.'
    const failure = classifyFailure({
      status: 401,
      headers: {},
      body: { error: { message, type: 'invalid_request_error', code: 'invalid_api_key' } },
      now,
    })
    expect(failure.message).toBe(message)
  })

  it('says "HTTP <status>" when the answer has no words', () => {
    expect(classifyFailure({ status: 504, headers: {}, body: '', now }).message).toBe('HTTP 504')
    expect(classifyFailure({ status: 500, headers: {}, body: { error: {} }, now }).message).toBe('HTTP 500')
    expect(classifyFailure({ status: 502, headers: {}, body: null, now }).message).toBe('HTTP 502')
  })

  it('trims a plain-text body and cuts it to 500 characters', () => {
    const failure = classifyFailure({ status: 502, headers: {}, body: `  ${'x'.repeat(800)}  \n`, now })
    expect(failure.message).toBe('x'.repeat(500))
  })

  it('puts nothing from the response headers into the message', () => {
    const failure = classifyFailure({
      status: 401,
      headers: { 'www-authenticate': 'Bearer realm="sk-live-secret"', 'x-request-id': 'req-123' },
      body: '',
      now,
    })
    expect(failure.message).toBe('HTTP 401')
    expect(JSON.stringify(failure)).not.toContain('sk-live-secret')
  })

  it('reads a Bedrock message spelled "Message" and the error type from the header', () => {
    const failure = classifyFailure({
      status: 429,
      headers: { 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
      body: { Message: 'Too many tokens, please wait before trying again.' },
      now,
    })
    expect(failure).toMatchObject({ failureClass: 'rate_limit', code: 'ThrottlingException', message: 'Too many tokens, please wait before trying again.' })
  })

  it('reads a JSON error that arrived labelled as text', () => {
    const text = '{"error":{"message":"Invalid API Key","type":"invalid_request_error","code":"invalid_api_key"}}'
    const failure = classifyFailure({ status: 401, headers: {}, body: text, now })
    expect(failure).toMatchObject({ failureClass: 'credential', message: 'Invalid API Key', code: 'invalid_api_key' })
    expect(classifyFailure({ status: 400, headers: {}, body: '{not json', now }).message).toBe('{not json')
  })

  it('prefers a code word over a status echoed as a code', () => {
    const failure = classifyFailure({
      status: 429,
      headers: {},
      body: { object: 'error', message: 'Rate limit exceeded', type: 'rate_limited', param: null, code: '1300' },
      now,
    })
    expect(failure.code).toBe('rate_limited')
  })

  it('takes no window reset as the wait of a failure that is not a rate limit', () => {
    const headers = { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '20s' }
    const body = { error: { message: 'Invalid value for temperature', type: 'invalid_request_error', code: null } }
    expect(classifyFailure({ status: 400, headers, body, now }).waitHintMs).toBeNull()
    expect(classifyFailure({ status: 429, headers, body: { error: { message: 'slow', code: 'rate_limit_exceeded' } }, now }).waitHintMs).toBe(20_000)
  })

  it('judges an error after a 200 by its code only', () => {
    const rateLimited = { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limited' } }
    expect(classifyFailure({ status: 200, headers: {}, body: rateLimited, now }).failureClass).toBe('rate_limit')
    const worded = { error: { message: 'Incorrect API key provided' } }
    expect(classifyFailure({ status: 200, headers: {}, body: worded, now }).failureClass).toBe('unknown')
  })

  it('classes a 5xx that reports a rate limit as rate_limit, and an overloaded one as transient', () => {
    expect(classifyFailure({ status: 503, headers: {}, body: 'Too Many Requests', now }).failureClass).toBe('rate_limit')
    expect(classifyFailure({ status: 500, headers: {}, body: { error: { message: 'rate limit hit upstream' } }, now }).failureClass).toBe(
      'rate_limit',
    )
    expect(classifyFailure({ status: 529, headers: {}, body: 'Overloaded', now }).failureClass).toBe('transient')
  })

  it('falls back to the status: 410 is a retired model, 402 account money, other 4xx unknown', () => {
    expect(classifyFailure({ status: 410, headers: {}, body: '', now })).toMatchObject({ failureClass: 'model_gone', scope: 'model' })
    expect(classifyFailure({ status: 402, headers: {}, body: '', now })).toMatchObject({ failureClass: 'quota', scope: 'key' })
    expect(classifyFailure({ status: 409, headers: {}, body: '', now }).failureClass).toBe('unknown')
  })
})

describe('failures without an answer', () => {
  it('names the errno code of a network error, found through undici causes', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' })
    const failure = networkFailure(new TypeError('fetch failed', { cause }))
    expect(failure).toEqual({
      failureClass: 'transient',
      scope: 'model',
      status: 0,
      waitHintMs: null,
      message: 'network error: ECONNREFUSED',
      code: 'ECONNREFUSED',
    })
  })

  it('finds the code inside an AggregateError and an undici socket error', () => {
    const refused = Object.assign(new Error('connect'), { code: 'ECONNRESET' })
    expect(networkFailure(new AggregateError([new Error('first'), refused])).code).toBe('ECONNRESET')
    expect(networkFailure(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' })).code).toBe('UND_ERR_SOCKET')
  })

  it('never repeats the error message, which may hold a URL with a key in it', () => {
    const error = Object.assign(new Error('getaddrinfo ENOTFOUND https://x.example/v1?key=AIzaSecret'), { code: 'ENOTFOUND' })
    const failure = networkFailure(error)
    expect(failure.message).toBe('network error: ENOTFOUND')
    expect(networkFailure(new Error('https://x.example/?key=AIzaSecret')).message).toBe('network error')
  })

  it('describes timeouts and cancellations', () => {
    expect(timeoutFailure(30_000)).toMatchObject({ failureClass: 'timeout', status: 0, message: 'no answer within 30000 ms' })
    expect(cancelledFailure()).toMatchObject({ failureClass: 'cancelled', status: 0, waitHintMs: null })
  })
})

describe('a rate limit the provider says lasts an hour or more is quota (issue 36, item 7)', () => {
  const now = FIXTURE_NOW
  const limited = { error: { code: '429', message: 'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier.' } }

  it('reads the stated wait (retry-after, the wording) and keeps a shorter one a rate limit', () => {
    expect(classifyFailure({ status: 429, headers: { 'retry-after': '3600' }, body: limited, now })).toMatchObject({ failureClass: 'quota', scope: 'model', waitHintMs: 3_600_000 })
    expect(classifyFailure({ status: 429, headers: { 'retry-after': '3599' }, body: limited, now })).toMatchObject({ failureClass: 'rate_limit', scope: 'model', waitHintMs: 3_599_000 })
  })

  it('never makes a quota of a long rate window\'s reset alone (a daily window among several, none said spent)', () => {
    const headers = { 'x-ratelimit-reset-requests': '2h0m0s', 'x-ratelimit-remaining-requests': '5', 'x-ratelimit-reset-tokens': '20s', 'x-ratelimit-remaining-tokens': '7' }
    expect(classifyFailure({ status: 429, headers, body: { error: { message: 'Rate limit reached for gpt-4o.', type: 'requests', code: 'rate_limit_exceeded' } }, now })).toMatchObject({ failureClass: 'rate_limit', scope: 'model', waitHintMs: 7_200_000 })
  })
})
