/**
 * Behaviours f and c of issue 11 on a fleet, not only on the node itself: two gateway processes
 * on real libp2p and one Postgres, the simulator upstream, read through the HTTP API only.
 *
 * f. A refusal from a request sent before its key was edited or released fails no route and
 *    holds the key on no node: not on the node that sent it, not on the peer that made the edit.
 * c. A key changed in config.json and picked up at a restart is an edit on every node (its holds
 *    are released on the running peer too), and switches changed in config.json reach the peer.
 *
 * "Holds nothing" is an absence: each one is read after the fleet has shown, in the same test,
 * that it shares a hold within the same wait (the positive control), so a slow fleet cannot pass it.
 */
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { restartGateway, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'
import { freePort } from '@switchboard/test-kit'

const SECRET = 'policy-fleet-secret-0123456789abcdef'
/** How long a hold takes to reach the peer, at most, on a loaded machine (fleet.test.ts sees well under 5 s). */
const GOSSIP_MS = 8_000

type Json = Record<string, any>

let simulator: SimulatorProcess
let database: TestDatabase
const nodes = new Map<'a' | 'b', { env: NodeJS.ProcessEnv; process: GatewayProcess }>()

const url = (node: 'a' | 'b') => nodes.get(node)!.process.url

async function admin(node: 'a' | 'b', method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${url(node)}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: response.status, json: (await response.json()) as Json }
}

async function chat(node: 'a' | 'b', model: string): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${url(node)}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  })
  return { status: response.status, json: (await response.json()) as Json }
}

const conditions = async (node: 'a' | 'b', provider: string) => ((await admin(node, 'GET', '/api/adaptive-routing/conditions')).json.conditions as Json[]).filter((condition) => condition.provider === provider)
const routeState = async (node: 'a' | 'b', provider: string, keyName?: string) =>
  ((await admin(node, 'GET', '/api/adaptive-routing/routes')).json.routes as Json[]).find((route) => route.provider === provider && route.model === 'gpt-4o' && (keyName === undefined || route.key_name === keyName))?.state
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const config = (overrides: { c1Value?: string; switches?: Record<string, boolean> } = {}) => ({
  providers: {
    // f: one key, so a refused request is the key's and ends in 502.
    slow: { keys: [{ name: 's1', value: 'sk-pf-slow-s1-1111', models: ['gpt-4o'], weight: 1 }], network_config: { base_url: simulator.url, max_retries: 0 }, custom_provider_config: { base_provider_type: 'openai' } },
    // c: a key refused on both nodes, then rotated in config.json.
    openai: {
      keys: [
        { name: 'c1', value: overrides.c1Value ?? 'sk-pf-openai-c1-2222', models: ['gpt-4o'], weight: 1 },
        { name: 'c2', value: 'sk-pf-openai-c2-3333', models: ['gpt-4o'], weight: 1 },
      ],
      network_config: { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 40 },
    },
  },
  ...(overrides.switches ? { load_balancer_config: overrides.switches } : {}),
})

beforeAll(async () => {
  simulator = await startSimulator()
  database = await createTestDatabase()
  const ports = await Promise.all([freePort(), freePort()])
  const started = await Promise.all(
    (['a', 'b'] as const).map(async (node, index) => {
      const env = {
        SWITCHBOARD_NODE_ID: `policy-fleet-${node}`,
        SWITCHBOARD_REGION: 'eu',
        SWITCHBOARD_P2P_PORT: String(ports[index]),
        SWITCHBOARD_PEERS: `127.0.0.1:${ports[1 - index]}`,
        SWITCHBOARD_FLEET_SECRET: SECRET,
        SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-policy-fleet-${node}-`)),
        SWITCHBOARD_DATABASE_URL: database.url,
      }
      return [node, { env, process: await startGateway(config(), env) }] as const
    }),
  )
  for (const [node, entry] of started) nodes.set(node, entry)
  // The two nodes see each other (bounded by time).
  const deadline = Date.now() + 30_000
  for (const node of ['a', 'b'] as const) {
    while ((await admin(node, 'GET', '/api/cluster')).json.members.length !== 2) {
      if (Date.now() > deadline) throw new Error(`node ${node} never saw its peer`)
      await sleep(200)
    }
  }
}, 90_000)

afterAll(async () => {
  for (const { process } of nodes.values()) await process.stop()
  await simulator?.stop()
  await database?.drop()
})

describe('f. a refusal from a request sent before its key changed, on a fleet', () => {
  it('holds nothing and fails no route on either node when the key was edited on the peer while the request was in flight', async () => {
    await simulator.setRules([{ key: 'sk-pf-slow-s1-1111', fault: 'invalid_api_key', latency_ms: 2_000 }])
    const inFlight = chat('a', 'slow/gpt-4o')
    await sleep(500)
    // The edit is made on node b (its weight), while node a's request is out with the key.
    const provider = (await admin('b', 'GET', '/api/providers/slow')).json
    expect((await admin('b', 'PUT', '/api/providers/slow', { ...provider, keys: [{ ...provider.keys[0], value: 'sk-pf-slow-s1-1111', weight: 2 }] })).status).toBe(200)
    expect((await inFlight).status).toBe(502)
    // Node a has the edit (it re-read the providers), then the fleet has had its gossip time.
    await expect.poll(async () => (await admin('a', 'GET', '/api/providers/slow')).json.keys[0].weight, { timeout: 10_000, interval: 200 }).toBe(2)
    await sleep(GOSSIP_MS)
    for (const node of ['a', 'b'] as const) {
      expect(await conditions(node, 'slow')).toEqual([])
      expect(await routeState(node, 'slow')).not.toBe('failed')
    }

    // The control: a refusal sent after the edit holds the key on both nodes within the same wait.
    await simulator.setRules([{ key: 'sk-pf-slow-s1-1111', fault: 'invalid_api_key' }])
    expect((await chat('a', 'slow/gpt-4o')).status).toBe(502)
    await expect.poll(async () => (await conditions('b', 'slow')).length, { timeout: GOSSIP_MS, interval: 200 }).toBe(1)
    expect(await routeState('b', 'slow')).toBe('failed')
  }, 60_000)

  it('does not hold it again on either node when the hold was released on the peer while a request was in flight', async () => {
    // Held on both (from the test above, or now), and due at once is not what we want: the request goes anyway on the one key.
    await simulator.setRules([{ key: 'sk-pf-slow-s1-1111', fault: 'invalid_api_key', latency_ms: 2_000 }])
    if ((await conditions('a', 'slow')).length === 0) {
      await simulator.setRules([{ key: 'sk-pf-slow-s1-1111', fault: 'invalid_api_key' }])
      await chat('a', 'slow/gpt-4o')
      await simulator.setRules([{ key: 'sk-pf-slow-s1-1111', fault: 'invalid_api_key', latency_ms: 2_000 }])
    }
    await expect.poll(async () => (await conditions('b', 'slow')).length, { timeout: GOSSIP_MS, interval: 200 }).toBe(1)
    // Every key of `slow` is held: node a sends the request anyway on s1 (its one attempt counts as the check).
    const inFlight = chat('a', 'slow/gpt-4o')
    await sleep(500)
    const held = (await conditions('b', 'slow'))[0]!
    expect((await admin('b', 'POST', '/api/adaptive-routing/conditions/clear', { provider: 'slow', key_id: held.key_id })).status).toBe(200)
    await expect.poll(async () => (await conditions('a', 'slow')).length, { timeout: GOSSIP_MS, interval: 200 }).toBe(0)
    expect((await inFlight).status).toBe(502)
    await sleep(GOSSIP_MS)
    for (const node of ['a', 'b'] as const) {
      expect(await conditions(node, 'slow')).toEqual([])
      expect(await routeState(node, 'slow')).not.toBe('failed')
    }
    await simulator.setRules([])
  }, 60_000)
})

describe('c. config.json changes picked up at a restart reach the running peer', () => {
  it('releases the holds of a key rotated in config.json on the peer too, and brings the peer the new switches', async () => {
    await simulator.setRules([{ key: 'sk-pf-openai-c1-2222', fault: 'invalid_api_key' }])
    for (let round = 0; round < 40 && (await conditions('a', 'openai')).length === 0; round++) expect((await chat('a', 'openai/gpt-4o')).status).toBe(200)
    expect((await conditions('a', 'openai')).map((condition) => condition.key_name)).toEqual(['c1'])
    await expect.poll(async () => (await conditions('b', 'openai')).length, { timeout: GOSSIP_MS, interval: 200 }).toBe(1)
    expect((await admin('b', 'GET', '/api/adaptive-routing/config')).json.prune_failed_fallbacks).toBe(false)

    // Node a stops; its config.json gets c1's new value and two switches; it starts again. Node b keeps running.
    const a = nodes.get('a')!
    await a.process.kill('SIGTERM')
    const switches = { direction_selection_enabled: true, route_selection_enabled: true, append_fallbacks_to_pinned: false, reroute_failed_directions: true, prune_failed_fallbacks: true }
    const next = config({ switches, c1Value: 'sk-pf-openai-c1-rotated-4444' })
    await writeFile(a.process.configFile, JSON.stringify(next))
    a.process = await restartGateway(a.process.configFile, a.env)

    expect(await conditions('a', 'openai')).toEqual([])
    await expect.poll(async () => (await conditions('b', 'openai')).length, { timeout: GOSSIP_MS, interval: 200 }).toBe(0)
    await expect.poll(async () => (await routeState('b', 'openai', 'c1')) ?? 'none', { timeout: GOSSIP_MS, interval: 200 }).not.toBe('failed')
    await expect.poll(async () => (await admin('b', 'GET', '/api/adaptive-routing/config')).json, { timeout: 20_000, interval: 250 }).toMatchObject(switches)
    await simulator.setRules([])
  }, 90_000)
})
