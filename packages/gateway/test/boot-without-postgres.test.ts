/**
 * A node that starts while Postgres is down (issue 37, items 5 and 6), real processes on a
 * real Postgres that the test stops and starts. Such a node used to say healthy and answer
 * every call 401 gateway_key_required ("no gateway key exists"), which was false. Now: it
 * listens at once and says `starting` (503) until it knows its gateway keys; inference
 * meanwhile answers 503 gateway_starting with retry-after, in each surface's error shape;
 * config.json's keys serve at once (degraded); a peer shares the fleet's keys (hashes) so the
 * node serves them, and follows the keys its peers create and revoke while it is cut off from
 * Postgres. And a settings write with history's settings during the outage is all or nothing:
 * 503 store_unavailable, nothing applied; once Postgres is back it lands whole.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureDatabase, stopEmbeddedDatabase } from '@switchboard/store'
import { freePort, startPrivateServer, type PrivateServer } from '@switchboard/test-kit'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const FLEET_SECRET = 'boot-without-postgres-secret-0123456789'
const CONFIG_KEY = 'sk-config-gateway-key-0123456789abcdef'

let server: PrivateServer
let database: TestDatabase
let simulator: SimulatorProcess
let nodeA: GatewayProcess
let apiKey: string
let closedUrl: string
const ports: number[] = []
const others: GatewayProcess[] = []

const config = () => ({
  providers: { openai: { keys: [{ name: 'up', value: 'sk-upstream-boot-aaaa', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } } },
})

async function call(node: GatewayProcess, method: string, path: string, options: { body?: unknown; key?: string; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${node.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(options.key ? { authorization: `Bearer ${options.key}` } : {}), ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(20_000),
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, json: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, any> }
}
const chat = (node: GatewayProcess, key?: string) => call(node, 'POST', '/v1/chat/completions', { key, body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } })
const SWITCHES = { direction_selection_enabled: true, route_selection_enabled: true, append_fallbacks_to_pinned: false, reroute_failed_directions: true, prune_failed_fallbacks: false }

async function fleetEnv(node: string, index: number, databaseUrl = database.url): Promise<NodeJS.ProcessEnv> {
  return {
    SWITCHBOARD_NODE_ID: node,
    SWITCHBOARD_P2P_PORT: String(ports[index]),
    SWITCHBOARD_PEERS: ports.filter((_, other) => other !== index).map((port) => `127.0.0.1:${port}`).join(','),
    SWITCHBOARD_FLEET_SECRET: FLEET_SECRET,
    SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-boot-${node}-`)),
    SWITCHBOARD_DATABASE_URL: databaseUrl,
  }
}

beforeAll(async () => {
  server = await startPrivateServer('boot-without-postgres')
  database = await createTestDatabase(server.handle.url)
  simulator = await startSimulator()
  ports.push(await freePort(), await freePort(), await freePort())
  // Nothing listens there: Postgres as a node sees it when it is down.
  closedUrl = `postgres://postgres:postgres@127.0.0.1:${await freePort()}/switchboard`
  nodeA = await startGateway(config(), await fleetEnv('node-a', 0))
  // A key made through the API: it lives only in Postgres (and in the memory of nodes that read it).
  const created = await call(nodeA, 'POST', '/api/gateway-keys', { body: { name: 'api-made' } })
  expect(created.status).toBe(201)
  apiKey = created.json.key
  expect((await chat(nodeA, apiKey)).status).toBe(200)
}, 120_000)

afterAll(async () => {
  for (const node of [...others, nodeA]) await node?.stop()
  await simulator?.stop()
  await database?.drop().catch(() => {})
  await server?.dispose()
})

describe('a node started while Postgres is down', () => {
  it('with no gateway keys to go by: listens at once, says starting (503), and answers inference 503 gateway_starting in each surface\'s shape', async () => {
    const node = await startGateway(config(), { SWITCHBOARD_DATABASE_URL: closedUrl, SWITCHBOARD_NODE_ID: 'node-lonely' })
    others.push(node)
    const health = await call(node, 'GET', '/health')
    expect(health.status).toBe(503)
    expect(health.json).toMatchObject({ status: 'starting', gateway_keys: { from: null } })
    expect(health.json.reasons.join(' ')).toMatch(/gateway keys not loaded yet/)
    await expect.poll(async () => (await call(node, 'GET', '/health')).json.database?.status, { timeout: 10_000 }).toBe('unreachable')
    expect(await call(node, 'GET', '/health/live')).toMatchObject({ status: 200, json: { status: 'alive' } })

    // It listened before Postgres was tried, and said where.
    const output = node.output()
    expect(output).toMatch(/switchboard starting on http/)
    expect(output.indexOf('switchboard starting on')).toBeLessThan(output.indexOf('switchboard listening on'))

    // Not "no gateway key exists" (401): the node does not know yet, and says so.
    for (const key of [undefined, CONFIG_KEY]) {
      const answer = await chat(node, key)
      expect(answer.status).toBe(503)
      expect(answer.headers.get('retry-after')).toBe('5')
      expect(answer.json.error).toMatchObject({ code: 'gateway_starting', type: 'server_error' })
      expect(answer.json.extra_fields).toMatchObject({ provider: null, attempts: [] })
    }
    const messages = await call(node, 'POST', '/v1/messages', { headers: { 'anthropic-version': '2023-06-01' }, body: { model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] } })
    expect(messages.status).toBe(503)
    expect(messages.headers.get('retry-after')).toBe('5')
    expect(messages.json).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'gateway_starting' } })
    const responses = await call(node, 'POST', '/v1/responses', { body: { model: 'openai/gpt-4o-mini', input: 'hi' } })
    expect(responses).toMatchObject({ status: 503, json: { error: { code: 'gateway_starting' } } })
    expect((await call(node, 'GET', '/v1/models')).json.error?.code).toBe('gateway_starting')
  }, 90_000)

  it('with gateway keys in config.json: serves them at once (degraded), and refuses a history settings write whole (503 store_unavailable)', async () => {
    const node = await startGateway({ ...config(), gateway_keys: [{ name: 'from-config', value: 'env.CONFIG_KEY' }] }, { SWITCHBOARD_DATABASE_URL: closedUrl, SWITCHBOARD_NODE_ID: 'node-configured', CONFIG_KEY })
    others.push(node)
    const health = await call(node, 'GET', '/health')
    expect(health.status).toBe(200)
    expect(health.json).toMatchObject({ status: 'degraded', gateway_keys: { from: 'config' } })
    expect(health.json.reasons.join(' ')).toMatch(/config\.json only/)
    expect((await chat(node, CONFIG_KEY)).status).toBe(200)
    expect((await chat(node)).json.error?.code).toBe('gateway_key_required')
    expect((await chat(node, 'sk-nobody-knows-this-0123456789')).json.error?.code).toBe('gateway_key_invalid')

    const before = (await call(node, 'GET', '/api/adaptive-routing/config')).json
    const refused = await call(node, 'PUT', '/api/adaptive-routing/config', { body: { ...SWITCHES, history_retention_days: 3 } })
    expect(refused.status).toBe(503)
    expect(refused.json.error).toMatchObject({ code: 'store_unavailable', message: expect.stringContaining('PostgreSQL is unreachable') })
    // Nothing applied: not the switches, not the retention.
    expect((await call(node, 'GET', '/api/adaptive-routing/config')).json).toEqual(before)
  }, 90_000)

  it('in a fleet: gets the fleet\'s gateway keys from a peer and serves them; settings with history are all or nothing on every node', async () => {
    await stopEmbeddedDatabase({ dataDir: server.dataDir })
    await expect.poll(async () => (await call(nodeA, 'GET', '/health')).json.database?.status, { timeout: 15_000 }).toBe('unreachable')
    // The running node refuses the write whole (it used to apply the switches, then answer 500).
    const before = (await call(nodeA, 'GET', '/api/adaptive-routing/config')).json
    const refused = await call(nodeA, 'PUT', '/api/adaptive-routing/config', { body: { ...SWITCHES, history_enabled: false } })
    expect(refused.status).toBe(503)
    expect(refused.json.error.code).toBe('store_unavailable')
    expect((await call(nodeA, 'GET', '/api/adaptive-routing/config')).json).toEqual(before)
    // The node it still is still serves its callers.
    expect((await chat(nodeA, apiKey)).status).toBe(200)

    const nodeB = await startGateway(config(), await fleetEnv('node-b', 1))
    others.push(nodeB)
    expect(nodeB.output()).toMatch(/Postgres is not answering at boot/)
    await expect.poll(async () => (await call(nodeB, 'GET', '/health')).json.gateway_keys?.from, { timeout: 20_000 }).toBe('peer')
    const health = await call(nodeB, 'GET', '/health')
    expect(health).toMatchObject({ status: 200, json: { status: 'degraded', database: { status: 'unreachable' } } })
    expect((await chat(nodeB, apiKey)).status).toBe(200)
    expect((await chat(nodeB)).json.error?.code).toBe('gateway_key_required')
    expect((await chat(nodeB, 'sk-nobody-knows-this-0123456789')).json.error?.code).toBe('gateway_key_invalid')

    // Postgres back: the keys come from it again, and the same write lands whole.
    await ensureDatabase({ dataDir: server.dataDir, port: server.port })
    await expect.poll(async () => (await call(nodeB, 'GET', '/health')).json, { timeout: 30_000 }).toMatchObject({ status: 'ok', gateway_keys: { from: 'postgres' } })
    const saved = await call(nodeA, 'PUT', '/api/adaptive-routing/config', { body: { ...SWITCHES, history_enabled: false } })
    expect(saved.status).toBe(200)
    expect((await call(nodeA, 'GET', '/api/adaptive-routing/config')).json).toMatchObject({ ...SWITCHES, history_enabled: false })
  }, 150_000)

  it('cut off from Postgres while its peers reach it: follows the keys they create and revoke', async () => {
    const nodeC = await startGateway(config(), await fleetEnv('node-c', 2, closedUrl))
    others.push(nodeC)
    await expect.poll(async () => (await call(nodeC, 'GET', '/health')).json.gateway_keys?.from, { timeout: 20_000 }).toBe('peer')
    expect((await chat(nodeC, apiKey)).status).toBe(200)

    const created = await call(nodeA, 'POST', '/api/gateway-keys', { body: { name: 'made-while-c-is-cut-off' } })
    expect(created.status).toBe(201)
    await expect.poll(async () => (await chat(nodeC, created.json.key)).status, { timeout: 10_000 }).toBe(200)
    const revoked = await call(nodeA, 'DELETE', `/api/gateway-keys/${created.json.id}`)
    expect(revoked.status).toBe(200)
    await expect.poll(async () => (await chat(nodeC, created.json.key)).json.error?.code, { timeout: 10_000 }).toBe('gateway_key_invalid')
    expect((await chat(nodeC, apiKey)).status).toBe(200)
  }, 90_000)
})
