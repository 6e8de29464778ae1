/**
 * The request path end to end: a gateway process in front of a simulator process, driven
 * by the official `openai` client and by raw HTTP.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess
let client: OpenAI

const network = (url: string, extra: Record<string, unknown> = {}) => ({ base_url: url, retry_backoff_initial: 10, retry_backoff_max: 50, ...extra })

beforeAll(async () => {
  simulator = await startSimulator()
  const url = simulator.url
  gateway = await startGateway({
    providers: {
      openai: {
        keys: [
          { name: 'primary-a', value: 'sk-test-aaaa', models: ['*'], weight: 1 },
          { name: 'primary-b', value: 'sk-test-bbbb', models: ['*'], weight: 1 },
        ],
        network_config: network(url),
      },
      solo: {
        keys: [{ name: 'solo-1', value: 'sk-solo-1111', models: ['*'], weight: 1 }],
        network_config: network(url, { max_retries: 1 }),
        custom_provider_config: { base_provider_type: 'openai' },
      },
      slow: {
        keys: [{ name: 'slow-1', value: 'sk-slow-2222', models: ['*'], weight: 1 }],
        network_config: network(url, { default_request_timeout_in_seconds: 0.4, max_retries: 0 }),
        custom_provider_config: { base_provider_type: 'openai' },
      },
      anthropic: {
        keys: [{ name: 'claude-1', value: 'sk-ant-3333', models: ['claude-3-5-haiku-latest'], weight: 1 }],
        network_config: network(url),
      },
      azure: {
        keys: [{ name: 'az-1', value: 'azkey-4444', models: ['gpt-4o'], weight: 1, azure_key_config: { deployments: { 'gpt-4o': 'prod-gpt4o' }, api_version: '2024-10-21' } }],
        network_config: network(url),
      },
    },
    server: { max_request_body_bytes: 64 * 1024 },
  })
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused-by-the-gateway', maxRetries: 0 })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

/** The fields our responses add, read off an SDK object. */
function extraFieldsOf(value: unknown): { provider: string; model: string; key_name: string | null; attempts: { key_name: string; failure_class: string | null; status: number; wait_hint_ms: number | null }[] } {
  return (value as { extra_fields: never }).extra_fields
}

async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, any> }> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

const messages = [{ role: 'user' as const, content: 'Say hello' }]

describe('serving through the openai client', () => {
  it('answers a non-stream request with extra_fields naming what served it', async () => {
    const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages })
    expect(completion.object).toBe('chat.completion')
    expect(completion.choices[0]!.message.content).toEqual(expect.any(String))
    const extra = extraFieldsOf(completion)
    expect(extra).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini' })
    expect(['primary-a', 'primary-b']).toContain(extra.key_name)
    expect(extra.attempts).toEqual([expect.objectContaining({ provider: 'openai', model: 'gpt-4o-mini', status: 200, failure_class: null, key_name: extra.key_name })])
  })

  it('streams, and the final chunk before [DONE] carries extra_fields', async () => {
    const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true })
    let text = ''
    let last: unknown
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ''
      last = chunk
    }
    expect(text.length).toBeGreaterThan(0)
    expect(extraFieldsOf(last)).toMatchObject({ provider: 'openai', attempts: [expect.objectContaining({ status: 200, failure_class: null })] })
  })

  it('serves Anthropic through chat.completions, non-stream and stream', async () => {
    const completion = await client.chat.completions.create({ model: 'anthropic/claude-3-5-haiku-latest', messages: [{ role: 'system', content: 'Be brief.' }, ...messages] })
    expect(completion.choices[0]!.message.content).toEqual(expect.any(String))
    expect(completion.choices[0]!.finish_reason).toBe('stop')
    expect(extraFieldsOf(completion)).toMatchObject({ provider: 'anthropic', key_name: 'claude-1' })
    const stream = await client.chat.completions.create({ model: 'claude-3-5-haiku-latest', messages, stream: true })
    let text = ''
    let finish: string | null | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(text.length).toBeGreaterThan(0)
    expect(finish).toBe('stop')
    expect((await simulator.requests()).map((request) => [request.provider, request.stream])).toEqual([
      ['anthropic', false],
      ['anthropic', true],
    ])
  })

  it('translates tool calls from Anthropic into OpenAI tool_calls', async () => {
    const completion = await client.chat.completions.create({
      model: 'anthropic/claude-3-5-haiku-latest',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    })
    const call = completion.choices[0]!.message.tool_calls?.[0]
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls')
    expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather' } })
    expect(() => JSON.parse((call as { function: { arguments: string } }).function.arguments)).not.toThrow()
  })

  it('serves Azure through the key deployment map', async () => {
    const completion = await client.chat.completions.create({ model: 'azure/gpt-4o', messages })
    expect(extraFieldsOf(completion)).toMatchObject({ provider: 'azure', key_name: 'az-1', model: 'gpt-4o' })
    expect((await simulator.requests())[0]).toMatchObject({ provider: 'azure', model: 'prod-gpt4o' })
  })
})

describe('retries, key rotation and fallbacks', () => {
  it('rotates at once off a revoked key and serves with the other', async () => {
    await simulator.setRules([{ key: 'sk-test-aaaa', fault: 'invalid_api_key' }])
    for (let round = 0; round < 4; round++) {
      const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages })
      const extra = extraFieldsOf(completion)
      expect(extra.key_name).toBe('primary-b')
      const failed = extra.attempts.filter((attempt) => attempt.failure_class !== null)
      expect(failed.every((attempt) => attempt.failure_class === 'credential' && attempt.key_name === 'primary-a' && attempt.status === 401)).toBe(true)
    }
  })

  it('answers 502 upstream_credentials_exhausted when every key is refused, with one attempt per key', async () => {
    await simulator.setRules([{ provider: 'openai', fault: 'invalid_api_key' }])
    const { status, json } = await post({ model: 'openai/gpt-4o-mini', messages })
    expect(status).toBe(502)
    expect(json.error).toMatchObject({ code: 'upstream_credentials_exhausted', type: 'upstream_error' })
    expect(json.error.message).toMatch(/refused/)
    expect(json.extra_fields.attempts.map((attempt: { key_name: string }) => attempt.key_name).sort()).toEqual(['primary-a', 'primary-b'])
    expect(JSON.stringify(json)).not.toContain('sk-test-aaaa')
  })

  it('falls back to the next provider with its own budget when the primary fails, and says which served', async () => {
    await simulator.setRules([{ provider: 'openai', fault: 'invalid_api_key' }])
    const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, fallbacks: ['anthropic/claude-3-5-haiku-latest'] } as never)
    const extra = extraFieldsOf(completion)
    expect(extra).toMatchObject({ provider: 'anthropic', model: 'claude-3-5-haiku-latest', key_name: 'claude-1' })
    expect(extra.attempts.map((attempt) => attempt.failure_class)).toEqual(['credential', 'credential', null])
  })

  it('returns the primary error when every fallback fails too', async () => {
    await simulator.setRules([
      { provider: 'openai', fault: 'invalid_api_key' },
      { provider: 'anthropic', fault: 'server_error' },
    ])
    const { status, json } = await post({ model: 'openai/gpt-4o-mini', messages, fallbacks: ['anthropic/claude-3-5-haiku-latest'] })
    expect(status).toBe(502)
    expect(json.error.code).toBe('upstream_credentials_exhausted')
    expect(json.extra_fields.provider).toBe('openai')
    // Anthropic's budget: the first try plus max_retries (2) on the same key.
    expect(json.extra_fields.attempts.filter((attempt: { provider: string }) => attempt.provider === 'anthropic')).toHaveLength(3)
  })

  it('retries a transient failure on the same key', async () => {
    await simulator.setRules([{ provider: 'openai', fault: 'server_error', times: 1 }])
    const completion = await client.chat.completions.create({ model: 'solo/gpt-4o-mini', messages })
    const attempts = extraFieldsOf(completion).attempts
    expect(attempts.map((attempt) => [attempt.key_name, attempt.failure_class])).toEqual([
      ['solo-1', 'transient'],
      ['solo-1', null],
    ])
  })

  it('moves a rate-limited request to another key', async () => {
    await simulator.setRules([{ key: 'sk-test-aaaa', fault: { preset: 'rate_limit', retry_after_s: 1 } }])
    for (let round = 0; round < 3; round++) {
      const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages })
      const extra = extraFieldsOf(completion)
      expect(extra.key_name).toBe('primary-b')
      for (const attempt of extra.attempts.filter((attempt) => attempt.failure_class !== null)) {
        expect(attempt).toMatchObject({ failure_class: 'rate_limit', status: 429, key_name: 'primary-a', wait_hint_ms: 1000 })
      }
    }
  })

  it('does not wait on a key whose provider asks for longer than the backoff: gives up on a single-key provider', async () => {
    await simulator.setRules([{ key: 'sk-solo-1111', fault: { preset: 'rate_limit', retry_after_s: 30 } }])
    const started = Date.now()
    const { status, json } = await post({ model: 'solo/gpt-4o-mini', messages })
    expect(status).toBe(429)
    expect(json.error.code).toBe('upstream_rate_limited')
    expect(json.extra_fields.attempts).toHaveLength(1)
    expect(Date.now() - started).toBeLessThan(30_000)
  })

  it('answers a caller fault at once: no retry, no fallback', async () => {
    // A request the provider refuses as written (a bad parameter); a context too long is not that: stream-failover.test.ts.
    await simulator.setRules([{ provider: 'openai', fault: 'bad_request' }])
    const { status, json } = await post({ model: 'openai/gpt-4o-mini', messages, fallbacks: ['anthropic/claude-3-5-haiku-latest'] })
    expect(status).toBe(400)
    expect(json.error.code).toBe('upstream_rejected_request')
    expect(json.extra_fields.attempts).toEqual([expect.objectContaining({ failure_class: 'caller_fault', status: 400 })])
    expect((await simulator.requests()).map((request) => request.provider)).toEqual(['openai'])
  })

  it('times an attempt out after default_request_timeout_in_seconds and aborts the upstream call', async () => {
    await simulator.setRules([{ key: 'sk-slow-2222', latency_ms: 3000 }])
    const { status, json } = await post({ model: 'slow/gpt-4o-mini', messages })
    expect(status).toBe(504)
    expect(json.error.code).toBe('upstream_timeout')
    expect(json.extra_fields.attempts).toEqual([expect.objectContaining({ failure_class: 'timeout', status: 0 })])
    await expect.poll(async () => (await simulator.requests())[0]?.aborted, { timeout: 5000 }).toBe(true)
  })
})

describe('a client that goes away', () => {
  it('aborts the upstream call of a non-stream request', async () => {
    await simulator.setRules([{ provider: 'openai', latency_ms: 2000 }])
    const controller = new AbortController()
    const request = fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages }), signal: controller.signal })
    await expect.poll(() => simulator.inFlight(), { timeout: 5000 }).toBe(1)
    controller.abort()
    await expect(request).rejects.toThrow()
    await expect.poll(async () => (await simulator.requests())[0]?.aborted, { timeout: 5000 }).toBe(true)
  })

  it('aborts the upstream call of a stream cut mid-way', async () => {
    await simulator.setRules([{ provider: 'openai', chunk_delay_ms: 300, completion_tokens: 200 }])
    const controller = new AbortController()
    const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, stream: true }), signal: controller.signal })
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    await expect.poll(async () => (await simulator.requests())[0]?.aborted, { timeout: 5000 }).toBe(true)
  })
})

describe('bad input', () => {
  it.each([
    ['invalid JSON', '{"model": ', 400, 'invalid_json'],
    ['a missing model', { messages }, 400, 'invalid_request'],
    ['ill-typed messages', { model: 'openai/gpt-4o-mini', messages: 'hello' }, 400, 'invalid_request'],
    ['an unknown provider', { model: 'nosuch/gpt-4o', messages }, 400, 'unknown_provider'],
    ['an unknown fallback provider', { model: 'openai/gpt-4o', messages, fallbacks: ['nosuch/x'] }, 400, 'unknown_provider'],
    ['a model no key serves', { model: 'azure/gpt-3.5-turbo', messages }, 404, 'model_not_served'],
    ['an oversized body', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] }, 413, 'request_too_large'],
  ])('answers %s with %i %s and says what to fix', async (_name, body, status, code) => {
    const response = await post(body)
    expect(response.status).toBe(status)
    expect(response.json.error).toMatchObject({ code, type: expect.any(String), message: expect.any(String) })
    expect(response.json.error.message.length).toBeGreaterThan(20)
    // no upstream attempt was made, and the answer says so
    expect(response.json.extra_fields).toMatchObject({ key_id: null, key_name: null, attempts: [] })
    expect(await simulator.requests()).toEqual([])
  })

  it('survives garbage and keeps serving', async () => {
    const bodies = ['', 'null', '[]', '{"model":1}', '\u0000\u0001', '{"model":"openai/x","messages":[null]}', 'x'.repeat(10_000)]
    for (const body of bodies) expect((await post(body)).status).toBeGreaterThanOrEqual(400)
    const health = await fetch(`${gateway.url}/health`)
    expect(health.status).toBe(200)
  })
})
