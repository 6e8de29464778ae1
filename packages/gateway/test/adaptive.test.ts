/**
 * Adaptive routing end to end (issue 4): the five switches through the API, traffic moving
 * off a failing provider, the routes table, session affinity and direct keys.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createConfigStore, createPool } from '@switchboard/store'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

beforeAll(async () => {
  simulator = await startSimulator()
  const network = { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 20, max_retries: 0 }
  gateway = await startGateway({
    providers: {
      openai: {
        keys: [
          { name: 'oa-1', value: 'sk-adaptive-oa1-1111', models: ['gpt-4o'], weight: 1 },
          { name: 'oa-2', value: 'sk-adaptive-oa2-2222', models: ['gpt-4o'], weight: 1 },
        ],
        network_config: network,
      },
      azure: {
        keys: [{ name: 'az-1', value: 'azure-adaptive-3333', models: ['gpt-4o'], weight: 1 }],
        network_config: network,
      },
      groq: {
        keys: [
          { name: 'gq-1', value: 'gsk-adaptive-gq1-4444', models: ['llama-3.3-70b'], weight: 1 },
          { name: 'gq-2', value: 'gsk-adaptive-gq2-5555', models: ['llama-3.3-70b'], weight: 1 },
        ],
        network_config: network,
        custom_provider_config: { base_provider_type: 'openai' },
      },
    },
    client: { allow_direct_keys: true },
  })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(async () => {
  await simulator.setRules([])
  await simulator.resetRequests()
})

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: response.status, headers: response.headers, json: (await response.json()) as Record<string, any> }
}

const chat = (model: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) => call('POST', '/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }], ...extra }, headers)

const ALL_ON = { direction_selection_enabled: true, route_selection_enabled: true, append_fallbacks_to_pinned: true, reroute_failed_directions: true, prune_failed_fallbacks: true }

describe('the five switches', () => {
  it('start at the reference defaults, and a PUT is a full replacement', async () => {
    // Settings beyond the five (history's, issue 14) sit beside them.
    expect((await call('GET', '/api/adaptive-routing/config')).json).toMatchObject({ direction_selection_enabled: true, route_selection_enabled: true, append_fallbacks_to_pinned: false, reroute_failed_directions: false, prune_failed_fallbacks: false, history_enabled: true, history_retention_days: 7 })
    expect((await call('PUT', '/api/adaptive-routing/config', { ...ALL_ON, history_retention_days: 3 })).json).toMatchObject({ history_retention_days: 3, history_enabled: true })
    expect((await call('PUT', '/api/adaptive-routing/config', { ...ALL_ON, history_retention_days: 0 })).status).toBe(400)
    const put = await call('PUT', '/api/adaptive-routing/config', { reroute_failed_directions: true })
    expect(put.status).toBe(200)
    // A PUT replaces only the five switches: history's settings it omits keep their values.
    expect(put.json).toMatchObject({ direction_selection_enabled: false, route_selection_enabled: false, append_fallbacks_to_pinned: false, reroute_failed_directions: true, prune_failed_fallbacks: false, history_retention_days: 3 })
    expect((await call('PUT', '/api/adaptive-routing/config', { ...ALL_ON, route_selection_enabled: 'yes' })).status).toBe(400)
    expect((await call('PUT', '/api/adaptive-routing/config', { ...ALL_ON, prune_fallbacks: true })).status).toBe(400)
    // Persisted, as set through the API.
    const pool = createPool({ url: gateway.databaseUrl })
    try {
      const saved = await createConfigStore({ pool }).getSettings()
      expect(saved.load_balancer_config.reroute_failed_directions).toBe(true)
      expect(saved.origins.reroute_failed_directions).toBe('api')
    } finally {
      await pool.end()
    }
    await call('PUT', '/api/adaptive-routing/config', { ...ALL_ON, append_fallbacks_to_pinned: false, reroute_failed_directions: false, prune_failed_fallbacks: false })
  })

  it('answer on the deprecated alias too, with a Deprecation header and a warning', async () => {
    const old = await call('GET', '/api/load-balancer-config')
    expect(old.status).toBe(200)
    expect(old.headers.get('deprecation')).toBe('true')
    expect(old.headers.get('warning')).toMatch(/deprecated; use \/api\/adaptive-routing\/config/)
    expect(old.json).toEqual((await call('GET', '/api/adaptive-routing/config')).json)
  })

  it('take effect at once: appending fallbacks to a pinned request rescues it from a failing provider', async () => {
    await simulator.setRules([{ provider: 'openai', fault: 'server_error' }])
    expect((await chat('openai/gpt-4o')).status).toBe(500)
    await call('PUT', '/api/adaptive-routing/config', { ...ALL_ON, reroute_failed_directions: false, prune_failed_fallbacks: false })
    const rescued = await chat('openai/gpt-4o')
    expect(rescued.status).toBe(200)
    expect(rescued.json.extra_fields.provider).toBe('azure')
    await call('PUT', '/api/adaptive-routing/config', { ...ALL_ON, append_fallbacks_to_pinned: false, reroute_failed_directions: false, prune_failed_fallbacks: false })
  })
})

describe('traffic', () => {
  it('moves off a failing provider within two 5 s cycles and is listed in the routes table', async () => {
    await simulator.setRules([{ provider: 'openai', error_rate: 0.6, error: 'server_error' }])
    const started = Date.now()
    const firstTries: string[] = []
    // Bounded: 12 s of requests for the bare model, served by whichever provider the balancer picks.
    while (Date.now() - started < 12_000) {
      const { json } = await chat('gpt-4o')
      if (Date.now() - started > 10_000) firstTries.push(json.extra_fields.attempts[0].provider)
    }
    const onOpenAi = firstTries.filter((provider) => provider === 'openai').length / firstTries.length
    expect(firstTries.length).toBeGreaterThan(20)
    expect(onOpenAi).toBeLessThan(0.25)
    const routes = ((await call('GET', '/api/adaptive-routing/routes')).json.routes as Record<string, any>[]).filter((route) => route.model === 'gpt-4o')
    const openai = routes.filter((route) => route.provider === 'openai')
    expect(openai.length).toBe(2)
    for (const route of routes) {
      expect(route).toEqual(expect.objectContaining({ model: 'gpt-4o', key_id: expect.any(String), key_name: expect.any(String), state: expect.stringMatching(/^(healthy|degraded|failed|recovering)$/), weight: expect.any(Number), expected_share: expect.any(Number), actual_share: expect.any(Number), error_rate: expect.any(Number), in_flight: expect.any(Number), score: expect.objectContaining({ error_penalty: expect.any(Number), latency_score: expect.any(Number), utilisation: expect.any(Number) }) }))
    }
    expect(openai.every((route) => route.state !== 'healthy')).toBe(true)
    expect(routes.find((route) => route.provider === 'azure')!.weight).toBeGreaterThan(Math.max(...openai.map((route) => route.weight)))
  }, 30_000)
})

describe('sessions and direct keys', () => {
  it('keeps a session on its key, and moves it when the key is refused', async () => {
    const session = { 'x-bf-session-id': 'conversation-42' }
    const first = (await chat('groq/llama-3.3-70b', session)).json.extra_fields.key_name
    for (let index = 0; index < 10; index++) expect((await chat('groq/llama-3.3-70b', session)).json.extra_fields.key_name).toBe(first)
    await simulator.setRules([{ key: first === 'gq-1' ? 'gsk-adaptive-gq1-4444' : 'gsk-adaptive-gq2-5555', fault: 'invalid_api_key' }])
    const moved = await chat('groq/llama-3.3-70b', session)
    expect(moved.json.extra_fields.key_name).not.toBe(first)
    for (let index = 0; index < 5; index++) expect((await chat('groq/llama-3.3-70b', session)).json.extra_fields.key_name).toBe(moved.json.extra_fields.key_name)
    await call('POST', '/api/adaptive-routing/conditions/clear')
  })

  it('sends a direct key to the first provider only, never to a fallback', async () => {
    await simulator.setRules([{ key: 'sk-callers-own-key-9999', fault: 'invalid_api_key' }])
    const { status, json } = await chat('openai/gpt-4o', { 'x-bf-direct-key': 'sk-callers-own-key-9999' }, { fallbacks: ['azure/gpt-4o'] })
    expect(status).toBe(200)
    expect(json.extra_fields.provider).toBe('azure')
    const seen = (await simulator.requests()).map((request) => [request.provider, request.key_suffix])
    expect(seen).toEqual([
      ['openai', '9999'],
      ['azure', '3333'],
    ])
    expect(JSON.stringify(json)).not.toContain('sk-callers-own-key')
  })

  it('backs a key off when its rate-limit window runs out, before the provider refuses it', async () => {
    await call('POST', '/api/adaptive-routing/conditions/clear')
    await simulator.setRules([{ key: 'gsk-adaptive-gq1-4444', rpm: 2 }])
    await simulator.resetRequests()
    const failures: string[] = []
    for (let index = 0; index < 30; index++) {
      const { status, json } = await chat('groq/llama-3.3-70b')
      expect(status).toBe(200)
      failures.push(...json.extra_fields.attempts.filter((attempt: { failure_class: string | null }) => attempt.failure_class !== null).map((attempt: { failure_class: string }) => attempt.failure_class))
    }
    // The window's last request said "0 left": the key was left alone, never refused.
    expect(failures).toEqual([])
    expect((await simulator.requests()).filter((request) => request.key_suffix === '4444')).toHaveLength(2)
  })
})
