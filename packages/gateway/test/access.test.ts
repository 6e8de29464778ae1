/**
 * Safe by default (issue 13), against real gateway processes on a real Postgres: what the
 * cross-site page, the rebinding Host and the proxy get; gateway keys with the official
 * OpenAI and Anthropic clients; the --insecure start rule; and a fast-check fuzz of the chat
 * body that never gets a 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request as httpRequest } from 'node:http'
import fc from 'fast-check'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { runCli, startGateway, startSimulator, tempFile, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const CONFIG_KEY = 'sk-config-gateway-key-0123456789'

let simulator: SimulatorProcess
beforeAll(async () => {
  simulator = await startSimulator()
})
afterAll(async () => {
  await simulator?.stop()
})

const providers = (url: string) => ({
  openai: { keys: [{ name: 'prod-1', value: 'sk-prod-1-secret-aaaa', models: ['*'], weight: 1 }], network_config: { base_url: url } },
  anthropic: { keys: [{ name: 'main', value: 'sk-ant-secret-bbbb', models: ['*'], weight: 1 }], network_config: { base_url: url } },
})

/** A raw HTTP request, so Host and every header are exactly what we say (fetch fixes Host). */
function raw(url: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: target.hostname, port: target.port, method: options.method ?? 'GET', path: options.path, headers: { ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}), ...options.headers } }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve({ status: response.statusCode!, text, headers: response.headers }))
    })
    request.once('error', reject)
    request.end(options.body)
  })
}

const code = (text: string) => (JSON.parse(text) as { error?: { code?: string } }).error?.code
const chatBody = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

describe('no admin tokens, no gateway keys (npm start\'s defaults)', () => {
  let gateway: GatewayProcess
  beforeAll(async () => {
    gateway = await startGateway({ providers: providers(simulator.url) })
  })
  afterAll(async () => {
    await gateway?.stop()
  })

  it('refuses the cross-site simple POST that used to add a provider, and routing never sees it', async () => {
    const evil = JSON.stringify({ name: 'evil', keys: [{ name: 'k', value: 'sk-evil-0000', models: ['*'], weight: 1 }], network_config: { base_url: 'http://127.0.0.1:9' }, custom_provider_config: { base_provider_type: 'openai' } })
    const posted = await raw(gateway.url, { method: 'POST', path: '/api/providers', headers: { 'content-type': 'text/plain', origin: 'http://evil.example' }, body: evil })
    expect(posted.status).toBe(403)
    expect(code(posted.text)).toBe('origin_forbidden')
    const clear = await raw(gateway.url, { method: 'POST', path: '/api/adaptive-routing/conditions/clear', headers: { 'content-type': 'text/plain', origin: 'http://evil.example' }, body: '{}' })
    expect(clear.status).toBe(403)
    // Without an Origin (a form post from a privacy-minded browser, curl): text/plain still gets a 415.
    const plain = await raw(gateway.url, { method: 'POST', path: '/api/providers', headers: { 'content-type': 'text/plain' }, body: evil })
    expect(plain.status).toBe(415)
    const listed = await raw(gateway.url, { path: '/api/providers' })
    expect(listed.status).toBe(200)
    expect(listed.text).not.toContain('evil')
  })

  it('refuses a rebinding Host and requests through a proxy, on the admin API and on inference', async () => {
    const port = new URL(gateway.url).port
    const cases: Record<string, string>[] = [{ host: `evil.example:${port}` }, { 'x-forwarded-for': '203.0.113.7' }, { forwarded: 'for=203.0.113.7;proto=https' }]
    for (const headers of cases) {
      const admin = await raw(gateway.url, { path: '/api/providers', headers })
      expect(admin.status, JSON.stringify(headers)).toBe(403)
      expect(admin.text).toContain('SWITCHBOARD_ADMIN_TOKENS')
      const chat = await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json', ...headers }, body: chatBody })
      expect(chat.status, JSON.stringify(headers)).toBe(401)
      expect(code(chat.text)).toBe('gateway_key_required')
      expect(chat.text).toContain('/api/gateway-keys')
    }
    expect((await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json', host: `localhost:${port}` }, body: chatBody })).status).toBe(200)
  })

  it('answers inference with 415 for a missing or non-JSON content type, and 400 for JSON nested 5,000 deep', async () => {
    expect((await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', body: chatBody })).status).toBe(415)
    expect((await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'text/plain' }, body: chatBody })).status).toBe(415)
    const deep = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(5_000)}${']'.repeat(5_000)}}`
    const answer = await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: deep })
    expect(answer.status).toBe(400)
    expect(answer.text).toContain('64 levels')
  })

  it('never answers a fuzzed chat body with a 5xx', async () => {
    const value = fc.jsonValue({ maxDepth: 4 })
    const message = fc.oneof(
      fc.record({ role: fc.constantFrom('system', 'user', 'assistant', 'tool', 'wizard'), content: fc.oneof(fc.string(), value, fc.array(fc.record({ type: fc.constantFrom('text', 'image_url'), text: value }, { requiredKeys: ['type'] }))) }, { requiredKeys: ['role'] }),
      value,
    )
    const known = ['stream', 'temperature', 'top_p', 'n', 'max_tokens', 'max_completion_tokens', 'stop', 'tools', 'tool_choice', 'fallbacks', 'response_format', 'logit_bias', 'user', 'seed', 'presence_penalty', 'metadata', 'stream_options', '__proto__', 'constructor']
    const field = fc.constantFrom(...known)
    const body = fc.oneof(
      { weight: 6, arbitrary: fc.tuple(fc.constantFrom('openai/gpt-4o-mini', 'gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', 'nope/x', ''), fc.array(message, { minLength: 0, maxLength: 3 }), fc.dictionary(field, fc.oneof(value, fc.array(fc.string(), { maxLength: 12 })), { maxKeys: 4 })).map(([model, messages, extra]) => JSON.stringify({ model, messages, ...extra })) },
      { weight: 2, arbitrary: value.map((json) => JSON.stringify(json)) },
      { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 6_000 }).map((depth) => `{"model":"gpt-4o-mini","messages":${'['.repeat(depth)}${']'.repeat(depth)}}`) },
    )
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const answer = await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: text })
        if (answer.status >= 500) throw new Error(`${answer.status} for ${text.slice(0, 300)}: ${answer.text.slice(0, 300)}`)
      }),
      { numRuns: 250, interruptAfterTimeLimit: 40_000 },
    )
  }, 60_000)
})

describe('gateway keys', () => {
  let gateway: GatewayProcess
  const UPDATE = 'admin-update-token-0123456789'
  const VIEW = 'admin-view-token-0123456789'
  const admin = async (method: string, path: string, body?: unknown, token = UPDATE) => {
    const response = await fetch(`${gateway.url}${path}`, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: body === undefined ? undefined : JSON.stringify(body) })
    return { status: response.status, json: (await response.json()) as Record<string, any> }
  }
  beforeAll(async () => {
    gateway = await startGateway(
      { providers: providers(simulator.url), gateway_keys: [{ name: 'from-config', value: 'env.GATEWAY_KEY_APP', requests_per_minute: 1000 }] },
      { GATEWAY_KEY_APP: CONFIG_KEY, SWITCHBOARD_ADMIN_TOKENS: `${UPDATE}:update,${VIEW}:view` },
    )
  })
  afterAll(async () => {
    await gateway?.stop()
  })

  it('serves the official OpenAI client with a key from config.json, and refuses it without one', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: CONFIG_KEY, maxRetries: 0 })
    const reply = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    expect(reply.choices[0]!.message.content).toBeTruthy()
    const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true })
    let chunks = 0
    for await (const _chunk of stream) chunks++
    expect(chunks).toBeGreaterThan(0)
    const stranger = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'sk-not-a-gateway-key-000000', maxRetries: 0 })
    const refused = await stranger.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError)
    expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('gateway_key_invalid')
    // Loopback alone is not enough once a key exists.
    expect((await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: chatBody })).status).toBe(401)
  })

  it('creates a key (shown once, stored as a hash), lists it redacted, limits its models, and revokes it', async () => {
    const created = await admin('POST', '/api/gateway-keys', { name: 'ci-bot', models: ['gpt-4o-mini'], requests_per_minute: 100 })
    expect(created.status).toBe(201)
    const secret = created.json.key as string
    expect(secret).toMatch(/^sk-sb-/)
    const listed = await admin('GET', '/api/gateway-keys', undefined, VIEW)
    expect(listed.status).toBe(200)
    expect(listed.json.gateway_keys.map((key: { name: string }) => key.name)).toEqual(['from-config', 'ci-bot'])
    expect(JSON.stringify(listed.json)).not.toContain(secret)
    expect(JSON.stringify(listed.json)).not.toContain(CONFIG_KEY)
    expect((await admin('POST', '/api/gateway-keys', { name: 'other' }, VIEW)).status).toBe(403)
    expect((await admin('POST', '/api/gateway-keys', { name: 'ci-bot' })).status).toBe(409)
    expect((await admin('POST', '/api/gateway-keys', { name: 'x', requests_per_minute: -1 })).json.error.param).toBe('requests_per_minute')

    // x-api-key works as well as the bearer (what Anthropic's SDK sends).
    const viaHeader = await raw(gateway.url, { method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json', 'x-api-key': secret }, body: chatBody })
    expect(viaHeader.status).toBe(200)
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: secret, maxRetries: 0 })
    const otherModel = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error)
    expect(otherModel).toBeInstanceOf(OpenAI.PermissionDeniedError)
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
    expect(metrics).toMatch(/switchboard_gateway_key_requests_total\{gateway_key="ci-bot",status="200"\} 1/)
    expect(metrics).not.toContain(secret)

    expect((await admin('DELETE', `/api/gateway-keys/${created.json.id}`)).status).toBe(200)
    const revoked = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error)
    expect(revoked).toBeInstanceOf(OpenAI.AuthenticationError)
    expect((await admin('DELETE', `/api/gateway-keys/${created.json.id}`)).status).toBe(404)
  })

  it('keeps a key limited to providers inside them, for pinned models, fallbacks and what routing picks', async () => {
    const created = await admin('POST', '/api/gateway-keys', { name: 'anthropic-only', providers: ['anthropic'] })
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: created.json.key as string, maxRetries: 0 })
    const pinned = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error)
    expect(pinned).toBeInstanceOf(OpenAI.PermissionDeniedError)
    const fallback = await client.chat.completions.create({ model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }], fallbacks: ['openai/gpt-4o-mini'] } as OpenAI.ChatCompletionCreateParamsNonStreaming).catch((error: unknown) => error)
    expect(fallback).toBeInstanceOf(OpenAI.PermissionDeniedError)
    // A bare model both providers serve: only the key's provider is tried.
    for (let index = 0; index < 6; index++) {
      const reply = (await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })) as unknown as { extra_fields: { provider: string; attempts: { provider: string }[] } }
      expect(reply.extra_fields.provider).toBe('anthropic')
      expect(reply.extra_fields.attempts.every((attempt) => attempt.provider === 'anthropic')).toBe(true)
    }
  })

  it('serves the official Anthropic client on /v1/messages by its x-api-key, and refuses a stranger in Anthropic\'s shape', async () => {
    const client = new Anthropic({ baseURL: gateway.url, apiKey: CONFIG_KEY, maxRetries: 0 })
    const message = await client.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] })
    expect(message.content.length).toBeGreaterThan(0)
    const stranger = new Anthropic({ baseURL: gateway.url, apiKey: 'sk-ant-not-a-gateway-key-0000', maxRetries: 0 })
    const refused = await stranger.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError)
    expect((refused as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } })
    // Every inference surface runs the same check.
    for (const [method, path] of [['POST', '/v1/responses'], ['POST', '/v1/embeddings'], ['POST', '/v1/messages/count_tokens'], ['GET', '/v1/models']] as const) {
      const answer = await raw(gateway.url, { method, path, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{"model":"openai/gpt-4o-mini","input":"hi"}' } : {}) })
      expect(answer.status, path).toBe(401)
    }
    expect((await raw(gateway.url, { path: '/v1/models', headers: { authorization: `Bearer ${CONFIG_KEY}` } })).status).toBe(200)
  })
})

describe('starting exposed', () => {
  it('refuses a non-loopback --host without admin tokens, and starts with --insecure, warning', async () => {
    const file = await tempFile('config.json', JSON.stringify({ providers: providers(simulator.url) }))
    const refused = await runCli(['serve', '--config', file, '--port', '0', '--host', '0.0.0.0'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('--insecure')
    expect(refused.stderr).toContain('SWITCHBOARD_ADMIN_TOKENS')
    const insecure = await startGateway({ providers: providers(simulator.url) }, { SWITCHBOARD_HOST: '0.0.0.0', SWITCHBOARD_INSECURE: '1' })
    try {
      expect(insecure.output()).toContain('INSECURE')
      const local = `http://127.0.0.1:${new URL(insecure.url).port}`
      expect((await raw(local, { path: '/api/providers' })).status).toBe(200)
    } finally {
      await insecure.stop()
    }
  })
})
