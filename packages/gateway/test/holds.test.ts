/**
 * Held keys end to end (issue 5): a revoked key gets one request, then one check per due
 * time, while the other key serves everything; the release API behaves as the reference says.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

const REVOKED = 'sk-held-revoked-aaaa'
const HEALTHY = 'sk-held-healthy-bbbb'

beforeAll(async () => {
  simulator = await startSimulator()
  gateway = await startGateway({
    providers: {
      openai: {
        keys: [
          { name: 'revoked', value: REVOKED, models: ['*'], weight: 1 },
          { name: 'healthy', value: HEALTHY, models: ['*'], weight: 1 },
        ],
        network_config: { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 50 },
      },
      azure: {
        keys: [
          { name: 'eu', value: 'azure-eu-key-cccc', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
          { name: 'us', value: 'azure-us-key-dddd', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
        ],
        network_config: { base_url: simulator.url },
      },
    },
  })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(async () => {
  await simulator.setRules([])
  await fetch(`${gateway.url}/api/adaptive-routing/conditions/clear`, { method: 'POST' })
  await simulator.resetRequests()
})

async function chat(model: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

async function admin(method: string, path: string, body?: unknown) {
  const response = await fetch(`${gateway.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

/** Sends requests until the revoked key has been tried (and so held); bounded. */
async function untilHeld(): Promise<void> {
  for (let index = 0; index < 60; index++) {
    await chat('openai/gpt-4o-mini')
    if ((await admin('GET', '/api/adaptive-routing/conditions')).json.count > 0) return
  }
  throw new Error('the revoked key was never tried')
}

const keyId = async (provider: string, name: string): Promise<string> => {
  const { json } = await admin('GET', `/api/providers/${provider}`)
  return json.keys.find((key: { name: string }) => key.name === name).id
}

describe('a revoked key', () => {
  it('gets one request, then one check per due time, while every request is served by the other key', async () => {
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    const started = Date.now()
    let served = 0
    let first: number | null = null
    // Bounded: 36 s of requests, one every 150 ms, covers the 30 s (+-10 %) first rung once.
    while (Date.now() - started < 36_000) {
      const { status, json } = await chat('openai/gpt-4o-mini', { 'x-bf-routing-log': 'true' })
      expect(status).toBe(200)
      expect(json.extra_fields.key_name).toBe('healthy')
      served++
      if (first === null && json.extra_fields.attempts.some((attempt: { key_name: string }) => attempt.key_name === 'revoked')) {
        first = Date.now()
        expect(json.extra_fields.routing_log.join('\n')).toMatch(/openai refused key revoked for gpt-4o-mini: .*Holding that key back from every model for \d+s/)
      }
      await new Promise((resolve) => setTimeout(resolve, 150))
    }
    const toRevoked = (await simulator.requests()).filter((request) => request.key_suffix === 'aaaa')
    // The refusal that placed the hold, and exactly one check when it came due (27-33 s later).
    expect(toRevoked).toHaveLength(2)
    const gap = toRevoked[1]!.at - toRevoked[0]!.at
    expect(gap).toBeGreaterThanOrEqual(27_000)
    expect(gap).toBeLessThanOrEqual(33_500)
    expect(served).toBeGreaterThan(100)

    const { json } = await admin('GET', '/api/adaptive-routing/conditions')
    expect(json.conditions).toEqual([
      expect.objectContaining({ provider: 'openai', key_name: 'revoked', model: null, reason: 'credential', rung: 1, checks: 1, message: expect.stringMatching(/Incorrect API key/) }),
    ])
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
    expect(metrics).toMatch(/switchboard_holds_placed_total\{provider="openai",reason="credential"\} 1/)
    expect(metrics).toMatch(/switchboard_hold_checks_total\{provider="openai",outcome="refused_again"\} 1/)
    expect(metrics).toMatch(/switchboard_held_key_skips_total\{provider="openai"\} \d+/)
    // every upstream attempt is counted by how it ended: the refusal and the check, and the served ones
    expect(metrics).toMatch(/switchboard_upstream_attempts_total\{provider="openai",failure_class="credential"\} 2/)
    const servedAttempts = Number(/switchboard_upstream_attempts_total\{provider="openai",failure_class="none"\} (\d+)/.exec(metrics)?.[1])
    expect(servedAttempts).toBeGreaterThanOrEqual(served)
    expect(metrics).toMatch(new RegExp(`switchboard_upstream_attempt_seconds_count\\{provider="openai"\\} ${servedAttempts + 2}`))
    expect(metrics).toMatch(new RegExp(`switchboard_requests_total\\{provider="openai",status="200"\\} ${served}`))
  }, 60_000)

  it('is released by an operator and serves again once the provider takes it', async () => {
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    await untilHeld()
    const id = await keyId('openai', 'revoked')
    expect((await admin('GET', '/api/adaptive-routing/conditions')).json.count).toBe(1)
    await simulator.setRules([])
    expect((await admin('POST', '/api/adaptive-routing/conditions/clear', { provider: 'openai', key_id: id })).json).toEqual({ cleared: [id], count: 1 })
    expect((await admin('GET', '/api/adaptive-routing/conditions')).json.count).toBe(0)
    await simulator.resetRequests()
    for (let index = 0; index < 30; index++) await chat('openai/gpt-4o-mini')
    expect((await simulator.requests()).some((request) => request.key_suffix === 'aaaa')).toBe(true)
  })
})

describe('the release API', () => {
  it('refuses field combinations the reference does not allow, with a 400 that says why', async () => {
    const noProvider = await admin('POST', '/api/adaptive-routing/conditions/clear', { key_id: 'x' })
    expect(noProvider.status).toBe(400)
    expect(noProvider.json.error.message).toMatch(/key_id requires provider/)
    const noKey = await admin('POST', '/api/adaptive-routing/conditions/clear', { provider: 'openai', model: 'gpt-4o' })
    expect(noKey.status).toBe(400)
    expect(noKey.json.error.message).toMatch(/model requires provider and key_id/)
    expect((await admin('POST', '/api/adaptive-routing/conditions/clear', { provider: 'openai', keyid: 'x' })).status).toBe(400)
  })

  it('releases one model of a key by its route, a whole-key hold only by the key, and counts each hold once', async () => {
    const eu = await keyId('azure', 'eu')
    const revoked = await keyId('openai', 'revoked')
    await simulator.setRules([
      { key: 'azure-eu-key-cccc', model: 'gpt-4o', fault: 'model_not_found' },
      { key: REVOKED, fault: 'invalid_api_key' },
    ])
    await untilHeld()
    for (let index = 0; index < 40 && (await admin('GET', '/api/adaptive-routing/conditions')).json.count < 2; index++) await chat('azure/gpt-4o')
    const conditions = (await admin('GET', '/api/adaptive-routing/conditions')).json.conditions
    expect(conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ provider: 'azure', key_id: eu, model: 'gpt-4o', reason: 'model_access' }),
        expect.objectContaining({ provider: 'openai', key_id: revoked, model: null, reason: 'credential' }),
      ]),
    )
    // The held model leaves the key serving its other models.
    await simulator.resetRequests()
    for (let index = 0; index < 20; index++) await chat('azure/gpt-4o-mini')
    expect((await simulator.requests()).some((request) => request.key_suffix === 'cccc')).toBe(true)
    // A whole-key hold is not released by naming a model.
    expect((await admin('POST', '/api/adaptive-routing/conditions/clear', { provider: 'openai', key_id: revoked, model: 'gpt-4o' })).json).toEqual({ cleared: [], count: 0 })
    expect((await admin('POST', '/api/adaptive-routing/conditions/clear', { provider: 'azure', key_id: eu, model: 'gpt-4o' })).json).toEqual({ cleared: [`azure:lb-identifier:gpt-4o:lb-identifier:${eu}`], count: 1 })
    expect((await admin('POST', '/api/adaptive-routing/conditions/clear')).json).toEqual({ cleared: [revoked], count: 1 })
    expect((await admin('POST', '/api/adaptive-routing/conditions/clear')).json).toEqual({ cleared: [], count: 0 })
  })

  it('releases every hold of a key when the key is edited', async () => {
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    await untilHeld()
    expect((await admin('GET', '/api/adaptive-routing/conditions')).json.count).toBe(1)
    const provider = (await admin('GET', '/api/providers/openai')).json
    const edited = await admin('PUT', '/api/providers/openai', { ...provider, keys: provider.keys.map((key: { name: string; value: string }) => (key.name === 'revoked' ? { ...key, value: 'sk-held-rotated-eeee' } : key)) })
    expect(edited.status).toBe(200)
    await expect.poll(async () => (await admin('GET', '/api/adaptive-routing/conditions')).json.count).toBe(0)
  })
})
