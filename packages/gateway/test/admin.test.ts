/**
 * The providers admin API and admin auth against a gateway process on a real Postgres, and
 * "degraded, not down": Postgres stopped under a running node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import { createConfigStore, createPool, ensureDatabase, stopEmbeddedDatabase } from '@switchboard/store'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'
import { createTestDatabase } from '../../store/test/database.ts'
import { startPrivateServer, type PrivateServer } from '@switchboard/test-kit'

const UPDATE_TOKEN = 'update-token-0123456789abcdef'
const VIEW_TOKEN = 'view-token-0123456789abcdef'

let simulator: SimulatorProcess
beforeAll(async () => {
  simulator = await startSimulator()
})
afterAll(async () => {
  await simulator?.stop()
})

const providerConfig = (url: string) => ({
  providers: {
    openai: {
      keys: [{ name: 'prod-1', value: 'sk-prod-1-secret-value-aaaa', models: ['*'], weight: 1 }],
      network_config: { base_url: url },
    },
  },
})

async function call(gateway: GatewayProcess, method: string, path: string, body?: unknown, token?: string) {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, any>, text: '' }
}

describe('providers API', () => {
  let gateway: GatewayProcess
  beforeAll(async () => {
    gateway = await startGateway(providerConfig(simulator.url))
  })
  afterAll(async () => {
    await gateway?.stop()
  })

  it('lists providers imported from config.json with key values redacted', async () => {
    const { status, json } = await call(gateway, 'GET', '/api/providers')
    expect(status).toBe(200)
    expect(json.providers).toEqual([expect.objectContaining({ name: 'openai', type: 'openai', keys: [expect.objectContaining({ name: 'prod-1', value: 'sk-...aaaa', id: expect.any(String) })] })])
    expect(JSON.stringify(json)).not.toContain('secret-value')
  })

  it('creates, reads, replaces and deletes a provider, and inference follows each change', async () => {
    const groq = { name: 'groq', keys: [{ name: 'g-1', value: 'gsk-groq-secret-value-bbbb', models: ['llama-3.3-70b'], weight: 1 }], network_config: { base_url: simulator.url }, custom_provider_config: { base_provider_type: 'openai' } }
    const created = await call(gateway, 'POST', '/api/providers', groq)
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ name: 'groq', type: 'openai', keys: [{ name: 'g-1', value: 'gsk...bbbb' }] })
    expect((await call(gateway, 'POST', '/api/providers', groq)).status).toBe(409)

    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 })
    await expect.poll(async () => (await client.chat.completions.create({ model: 'groq/llama-3.3-70b', messages: [{ role: 'user', content: 'hi' }] }).catch(() => null)) !== null).toBe(true)
    await simulator.resetRequests()
    await client.chat.completions.create({ model: 'groq/llama-3.3-70b', messages: [{ role: 'user', content: 'hi' }] })
    expect((await simulator.requests()).map((request) => request.key_suffix)).toEqual(['bbbb'])

    // Sent back redacted, a value keeps the stored one; the weight changes.
    const read = await call(gateway, 'GET', '/api/providers/groq')
    const replaced = await call(gateway, 'PUT', '/api/providers/groq', { ...read.json, keys: [{ ...read.json.keys[0], weight: 5 }] })
    expect(replaced.status).toBe(200)
    expect(replaced.json.keys[0]).toMatchObject({ value: 'gsk...bbbb', weight: 5 })
    await simulator.resetRequests()
    await client.chat.completions.create({ model: 'groq/llama-3.3-70b', messages: [{ role: 'user', content: 'hi' }] })
    expect((await simulator.requests()).map((request) => request.key_suffix)).toEqual(['bbbb'])

    expect((await call(gateway, 'DELETE', '/api/providers/groq')).json).toEqual({ deleted: 'groq' })
    expect((await call(gateway, 'GET', '/api/providers/groq')).status).toBe(404)
    await expect.poll(async () => (await call(gateway, 'POST', '/v1/chat/completions', { model: 'groq/llama-3.3-70b', messages: [{ role: 'user', content: 'hi' }] })).json.error?.code).toBe('unknown_provider')
  })

  it('names the field and the reason of a bad body', async () => {
    const bad = await call(gateway, 'PUT', '/api/providers/openai', { keys: [{ name: 'x', value: 'sk-x', models: ['*'], weight: 'heavy' }] })
    expect(bad.status).toBe(400)
    expect(bad.json.error.message).toMatch(/keys\[0\]\.weight: expected number/)
    const unknown = await call(gateway, 'POST', '/api/providers', { name: 'mystery', keys: [] })
    expect(unknown.status).toBe(400)
    expect(unknown.json.error.message).toMatch(/unknown provider "mystery".*custom_provider_config/)
  })
})

describe('admin auth', () => {
  let gateway: GatewayProcess
  beforeAll(async () => {
    gateway = await startGateway(providerConfig(simulator.url), { SWITCHBOARD_ADMIN_TOKENS: `${UPDATE_TOKEN}:update,${VIEW_TOKEN}:view` })
  })
  afterAll(async () => {
    await gateway?.stop()
  })

  it('answers 401 without a token or with an unknown one, 403 for a view token on a change, 200 otherwise', async () => {
    expect((await call(gateway, 'GET', '/api/providers')).status).toBe(401)
    expect((await call(gateway, 'GET', '/api/providers', undefined, 'not-a-known-token-at-all')).status).toBe(401)
    expect((await call(gateway, 'GET', '/api/providers', undefined, VIEW_TOKEN)).status).toBe(200)
    const provider = { keys: [{ name: 'prod-1', value: 'sk-prod-1-secret-value-aaaa', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } }
    const denied = await call(gateway, 'PUT', '/api/providers/openai', provider, VIEW_TOKEN)
    expect(denied.status).toBe(403)
    expect(denied.json.error.code).toBe('admin_forbidden')
    expect((await call(gateway, 'PUT', '/api/providers/openai', provider, UPDATE_TOKEN)).status).toBe(200)
  })

  it('never needs a token for inference, /health or /metrics-free routes', async () => {
    expect((await call(gateway, 'GET', '/health')).status).toBe(200)
    expect((await call(gateway, 'POST', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200)
  })
})

describe('Postgres stopped under a running node', () => {
  let server: PrivateServer
  let gateway: GatewayProcess
  beforeAll(async () => {
    server = await startPrivateServer('gateway-outage')
    const database = await createTestDatabase(server.handle.url)
    gateway = await startGateway(providerConfig(simulator.url), { SWITCHBOARD_DATABASE_URL: database.url })
    await database.pool.end()
  })
  afterAll(async () => {
    await gateway?.stop()
    await server?.dispose()
  })

  it('keeps serving, says degraded, and lands the pending write once Postgres is back', async () => {
    await stopEmbeddedDatabase({ dataDir: server.dataDir })
    await expect.poll(async () => (await call(gateway, 'GET', '/health')).json.status, { timeout: 10_000 }).toBe('degraded')
    const health = (await call(gateway, 'GET', '/health')).json
    expect(health.reasons.join(' ')).toMatch(/Postgres/)

    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 })
    for (let index = 0; index < 5; index++) {
      const completion = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'still there?' }] })
      expect(completion.choices[0]!.message.content).toEqual(expect.any(String))
    }

    const edit = { keys: [{ name: 'prod-1', value: 'sk-prod-1-secret-value-aaaa', models: ['*'], weight: 1 }, { name: 'prod-2', value: 'sk-prod-2-secret-value-cccc', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } }
    const pending = await call(gateway, 'PUT', '/api/providers/openai', edit)
    expect(pending.status).toBe(202)
    expect(pending.json).toMatchObject({ pending: true, keys: [{ name: 'prod-1' }, { name: 'prod-2' }] })
    // Applied on the node at once: the new key serves.
    await simulator.setRules([{ key: 'sk-prod-1-secret-value-aaaa', fault: 'invalid_api_key' }])
    const served = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    expect((served as unknown as { extra_fields: { key_name: string } }).extra_fields.key_name).toBe('prod-2')
    await simulator.setRules([])

    await ensureDatabase({ dataDir: server.dataDir, port: server.port })
    await expect.poll(async () => (await call(gateway, 'GET', '/health')).json, { timeout: 20_000 }).toMatchObject({ status: 'ok', database: { pending_writes: 0 } })
    const pool = createPool({ url: gateway.databaseUrl })
    try {
      const stored = (await createConfigStore({ pool }).listProviders()).find((provider) => provider.name === 'openai')
      expect(stored?.keys.map((key) => key.name)).toEqual(['prod-1', 'prod-2'])
    } finally {
      await pool.end()
    }
  })
})
