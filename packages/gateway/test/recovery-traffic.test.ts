/**
 * Recovery gets traffic (issue 36, item 8), on a real gateway and simulator: a provider back from
 * an outage gets a real share of the next requests (not the 2 % floor) and is healthy again before
 * a generous deadline; under session traffic only, a released key that is still refused is sent a
 * request within seconds and held again, a due check is made, and no session leaves its key.
 * Spec: reference/adaptive-load-balancing.txt ("a recovered route returns to full traffic within
 * seconds", "Checking a held key again"). No timing thresholds: counts, and deadlines.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

const SERVING = 'sk-recovery-serving-1111'
const REFUSED = 'sk-recovery-refused-2222'

beforeAll(async () => {
  simulator = await startSimulator()
  const network = { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 20, max_retries: 0 }
  gateway = await startGateway({
    providers: {
      openai: {
        keys: [
          { name: 'serving', value: SERVING, models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
          { name: 'refused', value: REFUSED, models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
        ],
        network_config: network,
      },
      azure: {
        keys: [
          { name: 'az-1', value: 'azure-recovery-3333', models: ['gpt-4o'], weight: 1 },
          { name: 'az-2', value: 'azure-recovery-4444', models: ['gpt-4o'], weight: 1 },
        ],
        network_config: network,
      },
    },
  })
}, 60_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(20_000) })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

const chat = (model: string, headers: Record<string, string> = {}) => call('POST', '/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] }, headers)

async function routeStates(provider: string, model: string): Promise<string[]> {
  const routes = (await call('GET', '/api/adaptive-routing/routes')).json.routes as Record<string, any>[]
  return routes.filter((route) => route.provider === provider && route.model === model).map((route) => route.state)
}

/** Runs `step` until `done()`, at most `count` times and `deadlineMs`; true when done. */
async function until(done: () => Promise<boolean>, step: () => Promise<unknown>, count: number, deadlineMs: number): Promise<boolean> {
  const deadline = Date.now() + deadlineMs
  for (let index = 0; index < count && Date.now() < deadline; index++) {
    if (await done()) return true
    await step()
  }
  return done()
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a provider back from an outage', () => {
  it('gets a real share of the next requests once its trial serves, and is healthy again before a generous deadline', async () => {
    await simulator.setRules([{ provider: 'azure', fault: 'unavailable' }])
    const failed = await until(async () => (await routeStates('azure', 'gpt-4o')).every((state) => state === 'failed'), () => chat('gpt-4o'), 400, 30_000)
    expect(failed).toBe(true)
    await simulator.setRules([])
    // Its trial: a request sent to azure first once its round is due (5 s); served, it is back.
    let back = false
    expect(await until(async () => back, async () => {
      back = (await chat('gpt-4o')).json.extra_fields.provider === 'azure'
      await pause(50)
    }, 2_000, 60_000)).toBe(true)
    // The next 100 requests naming no provider: azure's share starts at about a quarter of an even split (the
    // 2 % floor before), growing with its ramp.
    let onAzure = 0
    for (let index = 0; index < 100; index++) {
      const { status, json } = await chat('gpt-4o')
      expect(status).toBe(200)
      if (json.extra_fields.attempts[0].provider === 'azure') onAzure++
    }
    expect(onAzure).toBeGreaterThanOrEqual(8)
    // Gradual, but seconds: every azure route healthy before a generous deadline of traffic.
    const paced = async () => {
      await chat('gpt-4o')
      await pause(20)
    }
    expect(await until(async () => (await routeStates('azure', 'gpt-4o')).every((state) => state === 'healthy'), paced, 3_000, 60_000)).toBe(true)
  }, 180_000)
})

describe('session traffic only', () => {
  const SESSIONS = ['conversation-1', 'conversation-2', 'conversation-3', 'conversation-4']

  /** The refused key held, then every session served by the serving key. */
  async function sessionsOnServingKey(fault: unknown): Promise<void> {
    await simulator.setRules([{ key: REFUSED, fault }])
    const held = await until(async () => (await call('GET', '/api/adaptive-routing/conditions')).json.count > 0, () => chat('openai/gpt-4o-mini'), 60, 30_000)
    expect(held).toBe(true)
    for (const session of SESSIONS) expect((await chat('openai/gpt-4o-mini', { 'x-bf-session-id': session })).json.extra_fields.key_name).toBe('serving')
  }

  /** One session request after another, round robin, every 200 ms. */
  let turn = 0
  const sessionRequest = async () => {
    const { json } = await chat('openai/gpt-4o-mini', { 'x-bf-session-id': SESSIONS[turn++ % SESSIONS.length]! })
    await pause(200)
    return json
  }

  it('a released key that is still refused is sent a request within seconds and held again; no session leaves its key', async () => {
    await sessionsOnServingKey('invalid_api_key')
    const keyId = (await call('GET', '/api/providers/openai')).json.keys.find((key: { name: string }) => key.name === 'refused').id
    expect((await call('POST', '/api/adaptive-routing/conditions/clear', { provider: 'openai', key_id: keyId })).json.count).toBe(1)
    await simulator.resetRequests()
    const reached = async () => (await simulator.requests()).some((request) => request.key_suffix === '2222')
    expect(await until(reached, sessionRequest, 150, 60_000)).toBe(true)
    expect((await call('GET', '/api/adaptive-routing/conditions')).json.conditions).toEqual([expect.objectContaining({ key_name: 'refused', reason: 'credential', rung: 0 })])
    // The request lent to it was served by the serving key behind it, and the sessions stay where their cache is.
    for (const session of SESSIONS) expect((await chat('openai/gpt-4o-mini', { 'x-bf-session-id': session })).json.extra_fields.key_name).toBe('serving')
    expect((await simulator.requests()).filter((request) => request.key_suffix === '2222')).toHaveLength(1)
  }, 120_000)

  it('a due check of a held key is made, however long every request keeps its session', async () => {
    await sessionsOnServingKey({ preset: 'rate_limit', retry_after_s: 10 })
    const checked = async () => ((await call('GET', '/api/adaptive-routing/conditions')).json.conditions[0]?.checks ?? 0) > 0
    expect(await until(checked, sessionRequest, 300, 90_000)).toBe(true)
    expect((await call('GET', '/api/adaptive-routing/conditions')).json.conditions).toEqual([expect.objectContaining({ key_name: 'refused', reason: 'rate_limit', rung: 1, checks: 1 })])
    for (const session of SESSIONS) expect((await chat('openai/gpt-4o-mini', { 'x-bf-session-id': session })).json.extra_fields.key_name).toBe('serving')
  }, 150_000)
})
