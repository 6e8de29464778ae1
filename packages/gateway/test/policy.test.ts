/**
 * The routing policy as the reference states it (issue 11, behaviours a-m), end to end: real
 * gateway processes in front of the simulator, read through the HTTP API only, so each test
 * also runs against an older build. Waits are bounded: a provider-stated wait is held for the
 * 10 s floor, the shortest hold there is.
 */
import { writeFile } from 'node:fs/promises'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { restartGateway, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
const gateways: GatewayProcess[] = []

const network = (url: string, extra: Record<string, unknown> = {}) => ({ base_url: url, retry_backoff_initial: 10, retry_backoff_max: 40, max_retries: 2, ...extra })
const SWITCHES_OFF = { direction_selection_enabled: true, route_selection_enabled: true, append_fallbacks_to_pinned: false, reroute_failed_directions: false, prune_failed_fallbacks: false }

beforeAll(async () => {
  simulator = await startSimulator()
})

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()))
  await simulator?.stop()
})

async function gatewayWith(config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const gateway = await startGateway(config, env)
  gateways.push(gateway)
  return gateway
}

type Json = Record<string, any>

async function chat(gateway: GatewayProcess, model: string, options: { headers?: Record<string, string>; fallbacks?: string[] } = {}) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...(options.fallbacks ? { fallbacks: options.fallbacks } : {}) }),
  })
  return { status: response.status, headers: response.headers, json: (await response.json()) as Json }
}

async function admin(gateway: GatewayProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(`${gateway.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: response.status, json: (await response.json()) as Json }
}

const conditions = async (gateway: GatewayProcess) => (await admin(gateway, 'GET', '/api/adaptive-routing/conditions')).json.conditions as Json[]
const routes = async (gateway: GatewayProcess) => (await admin(gateway, 'GET', '/api/adaptive-routing/routes')).json.routes as Json[]
const attemptsOf = (json: Json) => (json.extra_fields.attempts as Json[]).map((attempt) => `${attempt.provider}:${attempt.key_name}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Sends `model` until `key_name` of it is held (the key must be refusing); bounded. */
async function holdKey(gateway: GatewayProcess, model: string, keyName: string, options: { headers?: Record<string, string> } = {}): Promise<Json> {
  for (let round = 0; round < 40; round++) {
    const held = (await conditions(gateway)).find((condition) => condition.key_name === keyName)
    if (held) return held
    await chat(gateway, model, options)
  }
  throw new Error(`key ${keyName} was never held`)
}

/** A 429 with a 1 s retry-after: held for the 10 s floor, then due. */
const rateLimited = (key: string) => ({ key, fault: { preset: 'rate_limit', retry_after_s: 1 } })

describe('a. the check-a-held-provider-first detour obeys the switches', () => {
  let gateway: GatewayProcess
  beforeAll(async () => {
    gateway = await gatewayWith({
      providers: {
        groq: { keys: [{ name: 'g1', value: 'gsk-policy-a-g1-1111', models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url), custom_provider_config: { base_provider_type: 'openai' } },
        openai: { keys: [{ name: 'o1', value: 'sk-policy-a-o1-2222', models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url) },
        azure: { keys: [{ name: 'a1', value: 'azure-policy-a-a1-3333', models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url) },
      },
      client: { allow_direct_keys: true },
    })
  })

  it('never sends a pinned request elsewhere first, leaves it untouched with provider selection off, keeps direct keys off checks, and checks a re-routed request on its own provider', async () => {
    await simulator.setRules([rateLimited('gsk-policy-a-g1-1111'), rateLimited('sk-policy-a-o1-2222')])
    await holdKey(gateway, 'groq/gpt-4o', 'g1')
    await holdKey(gateway, 'openai/gpt-4o', 'o1')
    await simulator.setRules([])
    // Provider selection off, re-routing on: the request's provider and fallbacks are left untouched.
    await admin(gateway, 'PUT', '/api/adaptive-routing/config', { ...SWITCHES_OFF, direction_selection_enabled: false, reroute_failed_directions: true })
    await sleep(11_500)

    const untouched = await chat(gateway, 'azure/gpt-4o')
    expect(untouched.status).toBe(200)
    expect(attemptsOf(untouched.json)).toEqual(['azure:a1'])

    await admin(gateway, 'PUT', '/api/adaptive-routing/config', { ...SWITCHES_OFF, reroute_failed_directions: true })
    const pinned = await chat(gateway, 'azure/gpt-4o')
    expect(attemptsOf(pinned.json)).toEqual(['azure:a1'])

    await simulator.resetRequests()
    const direct = await chat(gateway, 'azure/gpt-4o', { headers: { 'x-bf-direct-key': 'azure-callers-own-9999' } })
    expect(direct.status).toBe(200)
    expect((await simulator.requests()).map((request) => `${request.provider}:${request.key_suffix}`)).toEqual(['azure:9999'])

    // Pinned to openai, held on every key, re-routing on: the check is openai's own, not groq's.
    const rerouted = await chat(gateway, 'openai/gpt-4o')
    expect(rerouted.status).toBe(200)
    expect(attemptsOf(rerouted.json)[0]).toBe('openai:o1')
    expect((await conditions(gateway)).map((condition) => condition.key_name)).toEqual(['g1'])
  }, 60_000)
})

describe('errors and checks on one provider set', () => {
  let gateway: GatewayProcess
  const keys = { o1: 'sk-policy-o1-aaaa', o2: 'sk-policy-o2-bbbb', a1: 'azure-policy-a1-cccc', an1: 'sk-ant-policy-an1-dddd', solo: 'sk-policy-solo-eeee' }
  beforeAll(async () => {
    gateway = await gatewayWith({
      providers: {
        openai: {
          keys: [
            { name: 'o1', value: keys.o1, models: ['gpt-4o'], weight: 1 },
            { name: 'o2', value: keys.o2, models: ['gpt-4o'], weight: 1 },
          ],
          network_config: network(simulator.url),
        },
        azure: { keys: [{ name: 'a1', value: keys.a1, models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url) },
        anthropic: { keys: [{ name: 'an1', value: keys.an1, models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url) },
        // One key, serving gpt-4o only through its alias.
        groq: {
          keys: [{ name: 'solo', value: keys.solo, models: ['llama-3.3-70b'], aliases: { 'gpt-4o-alias': 'llama-3.3-70b' }, weight: 1 }],
          network_config: network(simulator.url),
          custom_provider_config: { base_provider_type: 'openai' },
        },
      },
    })
  })

  beforeEach(async () => {
    await simulator.setRules([])
    await admin(gateway, 'POST', '/api/adaptive-routing/conditions/clear')
    await simulator.resetRequests()
  })

  it('d. answers with the primary\'s error when every target fails, and a caller fault from a fallback ends only that fallback', async () => {
    await simulator.setRules([{ key: keys.o1, fault: 'server_error' }, { key: keys.o2, fault: 'server_error' }, { key: keys.a1, fault: 'bad_request' }])
    const servedByLast = await chat(gateway, 'openai/gpt-4o', { fallbacks: ['azure/gpt-4o', 'anthropic/gpt-4o'] })
    expect(servedByLast.status).toBe(200)
    expect(servedByLast.json.extra_fields.provider).toBe('anthropic')

    await simulator.setRules([{ key: keys.o1, fault: 'server_error' }, { key: keys.o2, fault: 'server_error' }, { key: keys.a1, fault: 'bad_request' }, { key: keys.an1, fault: 'overloaded' }])
    const failed = await chat(gateway, 'openai/gpt-4o', { fallbacks: ['azure/gpt-4o', 'anthropic/gpt-4o'] })
    expect(failed.json.extra_fields.provider).toBe('openai')
    expect(failed.status).toBe(500)
  })

  it('e. with every key held, sends the request on one key only, and a due check is one attempt', async () => {
    await simulator.setRules([rateLimited(keys.o1), rateLimited(keys.o2)])
    await holdKey(gateway, 'openai/gpt-4o', 'o1')
    await holdKey(gateway, 'openai/gpt-4o', 'o2')
    await simulator.resetRequests()
    const anyway = await chat(gateway, 'openai/gpt-4o')
    expect(anyway.status).toBe(429)
    expect(anyway.json.extra_fields.attempts).toHaveLength(1)

    // Now o2 serves and o1 answers 503s; once o1 is due, its check is one attempt, then o2 serves.
    await admin(gateway, 'POST', '/api/adaptive-routing/conditions/clear', { provider: 'openai', key_id: (await conditions(gateway)).find((condition) => condition.key_name === 'o2')!.key_id, model: 'gpt-4o' })
    await simulator.setRules([{ key: keys.o1, fault: 'unavailable' }])
    const o1 = (await conditions(gateway)).find((condition) => condition.key_name === 'o1')!
    await sleep(Math.max(0, Date.parse(o1.next_check_at) - Date.now()) + 500)
    const checked = await chat(gateway, 'openai/gpt-4o')
    expect(checked.status).toBe(200)
    expect(attemptsOf(checked.json)).toEqual(['openai:o1', 'openai:o2'])
    expect((await conditions(gateway)).find((condition) => condition.key_name === 'o1')?.rung).toBe(o1.rung)
  }, 40_000)

  it('g. a 400 request error from a key held for a rejected credential releases the hold', async () => {
    await simulator.setRules([{ key: keys.a1, fault: 'invalid_api_key' }])
    await holdKey(gateway, 'azure/gpt-4o', 'a1')
    await simulator.setRules([{ key: keys.a1, fault: 'bad_request' }])
    // Every key of azure is held: the request goes anyway, and its answer settles the question.
    const answer = await chat(gateway, 'azure/gpt-4o')
    expect(answer.status).toBe(400)
    expect(await conditions(gateway)).toEqual([])
  })

  it('h. a 5xx holds nothing unless it reports a rate limit; a 402 holds the whole key whatever its words', async () => {
    await simulator.setRules([{ key: keys.a1, fault: { status: 500, body: { error: { message: 'invalid api key' } } } }])
    await chat(gateway, 'azure/gpt-4o')
    expect(await conditions(gateway)).toEqual([])

    await simulator.setRules([{ key: keys.a1, fault: { status: 402, body: { error: { message: 'You exceeded your current quota, please check your plan and billing details.' } } } }])
    const held = await holdKey(gateway, 'azure/gpt-4o', 'a1')
    expect(held.model).toBeNull()
  })

  it('i. answers 429 with retry-after, not 502, when the keys left are only rate limited', async () => {
    await simulator.setRules([{ key: keys.o2, fault: { preset: 'rate_limit', retry_after_s: 30 } }])
    await holdKey(gateway, 'openai/gpt-4o', 'o2')
    await simulator.setRules([{ key: keys.o1, fault: 'invalid_api_key' }, { key: keys.o2, fault: { preset: 'rate_limit', retry_after_s: 30 } }])
    const answer = await chat(gateway, 'openai/gpt-4o')
    expect(answer.status).toBe(429)
    expect(answer.json.error.code).toBe('upstream_rate_limited')
    const retryAfter = Number(answer.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(20)
    expect(retryAfter).toBeLessThanOrEqual(30)
  })

  it('j. keys that serve a model only through aliases are in the balancer\'s tables and states', async () => {
    const served = await chat(gateway, 'groq/gpt-4o-alias')
    expect(served.status).toBe(200)
    const listed = (await routes(gateway)).filter((route) => route.model === 'gpt-4o-alias')
    expect(listed.map((route) => `${route.provider}:${route.key_name}`)).toEqual(['groq:solo'])
    await simulator.setRules([{ key: keys.solo, fault: 'invalid_api_key' }])
    await holdKey(gateway, 'groq/gpt-4o-alias', 'solo')
    expect((await routes(gateway)).find((route) => route.model === 'gpt-4o-alias')?.state).toBe('failed')
  })

  it('a stream is in flight until it ends, and a stream cut mid-way counts against its route', async () => {
    const stream = (model: string) => fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }) })
    const inFlight = async () => (await routes(gateway)).find((route) => route.provider === 'anthropic' && route.model === 'gpt-4o')?.in_flight
    await simulator.setRules([{ key: keys.an1, chunk_delay_ms: 200, completion_tokens: 12 }])
    const answer = await stream('anthropic/gpt-4o')
    expect(answer.status).toBe(200)
    await sleep(300)
    expect(await inFlight()).toBe(1)
    await answer.text()
    expect(await inFlight()).toBe(0)

    const transient = async () => {
      const text = await (await fetch(`${gateway.url}/metrics`)).text()
      const line = text.split('\n').find((candidate) => candidate.startsWith('switchboard_upstream_attempts_total{') && candidate.includes('provider="anthropic"') && candidate.includes('failure_class="transient"'))
      return line === undefined ? 0 : Number(line.split(' ').pop())
    }
    const before = await transient()
    // Cut once: the cut counts against the route, and the stream is continued on it (Anthropic continues from a prefill).
    await simulator.setRules([{ key: keys.an1, fault: 'stream_cut', times: 1 }])
    const text = await (await stream('anthropic/gpt-4o')).text()
    expect(await transient()).toBe(before + 1)
    expect(text).toContain('data: [DONE]')
    expect(text).not.toContain('"error"')
  })

  it('f. a refusal from a request sent before its key was edited neither fails the route nor holds the key', async () => {
    const provider = (await admin(gateway, 'GET', '/api/providers/azure')).json
    await simulator.setRules([{ key: keys.a1, fault: 'invalid_api_key', latency_ms: 1_500 }])
    const inFlight = chat(gateway, 'azure/gpt-4o')
    await sleep(400)
    // The key is edited (here: its weight) while the request is in flight with it.
    expect((await admin(gateway, 'PUT', '/api/providers/azure', { ...provider, keys: [{ ...provider.keys[0], value: keys.a1, weight: 2 }] })).status).toBe(200)
    expect((await inFlight).status).toBe(502)
    expect(await conditions(gateway)).toEqual([])
    expect((await routes(gateway)).find((route) => route.provider === 'azure' && route.model === 'gpt-4o')?.state).not.toBe('failed')
  })
})

describe('l. direct keys follow the reference', () => {
  let closed: GatewayProcess
  let open: GatewayProcess
  beforeAll(async () => {
    const providers = { openai: { keys: [{ name: 'o1', value: 'sk-policy-l-o1-1111', models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url) } }
    ;[closed, open] = await Promise.all([gatewayWith({ providers }), gatewayWith({ providers, client: { allow_direct_keys: true } })])
  })

  it('refuses x-bf-direct-key with a 400 that says how to allow it, by default', async () => {
    const answer = await chat(closed, 'openai/gpt-4o', { headers: { 'x-bf-direct-key': 'sk-callers-own-key-7777' } })
    expect(answer.status).toBe(400)
    expect(answer.json.error.message).toContain('allow_direct_keys')
  })

  it('reports a refused direct key as the caller\'s key', async () => {
    await simulator.setRules([{ key: 'sk-callers-own-key-7777', fault: 'invalid_api_key' }])
    const answer = await chat(open, 'openai/gpt-4o', { headers: { 'x-bf-direct-key': 'sk-callers-own-key-7777' } })
    expect(answer.status).toBe(401)
    expect(answer.json.error.message).toContain('x-bf-direct-key')
    expect(answer.json.error.message).not.toContain('provider credentials')
    expect(JSON.stringify(answer.json)).not.toContain('sk-callers-own-key-7777')
    await simulator.setRules([])
  })
})

describe('b. a whole-key hold and its release', () => {
  let gateway: GatewayProcess
  beforeAll(async () => {
    gateway = await gatewayWith({
      providers: { openai: { keys: [{ name: 'w1', value: 'sk-policy-b-w1-1111', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 }, { name: 'w2', value: 'sk-policy-b-w2-2222', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 }], network_config: network(simulator.url) } },
    })
  })

  it('fails every model route of the key, and a release sends each of them to recovering', async () => {
    for (let index = 0; index < 6; index++) await chat(gateway, 'openai/gpt-4o-mini')
    await simulator.setRules([{ key: 'sk-policy-b-w1-1111', fault: 'invalid_api_key' }])
    const held = await holdKey(gateway, 'openai/gpt-4o', 'w1')
    expect(held.model).toBeNull()
    await simulator.setRules([])
    await admin(gateway, 'POST', '/api/adaptive-routing/conditions/clear', { provider: 'openai', key_id: held.key_id })
    const states = (await routes(gateway)).filter((route) => route.key_name === 'w1').map((route) => `${route.model}:${route.state}`).sort()
    expect(states).toEqual(['gpt-4o-mini:recovering', 'gpt-4o:recovering'])
  })
})

describe('c. a key changed in config.json and picked up at a restart', () => {
  it('is an edit: its holds are released', async () => {
    const config = (value: string) => ({ providers: { openai: { keys: [{ name: 'c1', value, models: ['gpt-4o'], weight: 1 }, { name: 'c2', value: 'sk-policy-c-c2-2222', models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url) } } })
    const first = await startGateway(config('sk-policy-c-c1-1111'), { SWITCHBOARD_NODE_ID: 'policy-c' })
    let second: GatewayProcess | undefined
    try {
      await simulator.setRules([{ key: 'sk-policy-c-c1-1111', fault: 'invalid_api_key' }])
      await holdKey(first, 'openai/gpt-4o', 'c1')
      // The leader writes the hold set to Postgres on the way out; the next boot restores it.
      await first.kill('SIGTERM')
      await writeFile(first.configFile, JSON.stringify(config('sk-policy-c-c1-rotated-3333')))
      second = await restartGateway(first.configFile, { SWITCHBOARD_DATABASE_URL: first.databaseUrl, SWITCHBOARD_NODE_ID: 'policy-c' })
      expect(await conditions(second)).toEqual([])
    } finally {
      await simulator.setRules([])
      await second?.stop()
      await first.stop()
    }
  }, 40_000)
})

describe('m. a due key is checked when every request carries a session', () => {
  let gateway: GatewayProcess
  beforeAll(async () => {
    gateway = await gatewayWith({
      providers: { openai: { keys: [{ name: 's1', value: 'sk-policy-m-s1-1111', models: ['gpt-4o'], weight: 1 }, { name: 's2', value: 'sk-policy-m-s2-2222', models: ['gpt-4o'], weight: 1 }], network_config: network(simulator.url) } },
    })
  })

  it('checks it within seconds of its due time, though sessions keep their keys', async () => {
    await simulator.setRules([rateLimited('sk-policy-m-s1-1111')])
    const held = await holdKey(gateway, 'openai/gpt-4o', 's1')
    await simulator.setRules([])
    const sessions = ['agent-1', 'agent-2', 'agent-3']
    // Warm every session on the key that is not held.
    for (const session of sessions) expect((await chat(gateway, 'openai/gpt-4o', { headers: { 'x-bf-session-id': session } })).json.extra_fields.key_name).toBe('s2')
    const dueAt = Date.parse(held.next_check_at)
    let checkedAt: number | null = null
    for (let round = 0; checkedAt === null && Date.now() < dueAt + 12_000; round++) {
      const answer = await chat(gateway, 'openai/gpt-4o', { headers: { 'x-bf-session-id': sessions[round % sessions.length]! } })
      if (attemptsOf(answer.json).includes('openai:s1')) checkedAt = Date.now()
      await sleep(150)
    }
    expect(checkedAt).not.toBeNull()
    expect(checkedAt! - dueAt).toBeLessThan(10_000)
  }, 40_000)
})
