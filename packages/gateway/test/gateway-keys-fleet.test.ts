/**
 * Gateway keys across a three-node fleet (issue 13), real processes on real libp2p and one
 * real Postgres: a key's requests per minute hold fleet-wide (at most the limit plus one per
 * node; the limit window is shortened for the test through SWITCHBOARD_GATEWAY_KEY_WINDOW_MS,
 * production's is a minute), and a key revoked on one node is refused by every node within a
 * second.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { freePort, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const SECRET = 'gateway-keys-fleet-secret-0123456789'
const LIMITED_KEY = 'sk-limited-gateway-key-0123456789'
const WINDOW_MS = 8_000
const LIMIT = 60

let simulator: SimulatorProcess
let database: TestDatabase
const nodes: GatewayProcess[] = []

async function chat(node: GatewayProcess, key: string): Promise<{ status: number; retryAfter: string | null }> {
  const response = await fetch(`${node.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  })
  await response.arrayBuffer()
  return { status: response.status, retryAfter: response.headers.get('retry-after') }
}

beforeAll(async () => {
  simulator = await startSimulator()
  database = await createTestDatabase()
  const config = {
    providers: { openai: { keys: [{ name: 'k', value: 'sk-upstream-aaaa', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } } },
    gateway_keys: [{ name: 'limited', value: 'env.LIMITED_KEY', requests_per_minute: LIMIT }],
  }
  const ports = await Promise.all([0, 1, 2].map(() => freePort()))
  const started = await Promise.all(
    ['node-a', 'node-b', 'node-c'].map(async (node, index) =>
      startGateway(config, {
        SWITCHBOARD_NODE_ID: node,
        SWITCHBOARD_REGION: index === 2 ? 'us' : 'eu',
        SWITCHBOARD_P2P_PORT: String(ports[index]),
        SWITCHBOARD_PEERS: ports.filter((_, other) => other !== index).map((port) => `127.0.0.1:${port}`).join(','),
        SWITCHBOARD_FLEET_SECRET: SECRET,
        SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-${node}-`)),
        SWITCHBOARD_DATABASE_URL: database.url,
        SWITCHBOARD_GATEWAY_KEY_WINDOW_MS: String(WINDOW_MS),
        LIMITED_KEY,
      }),
    ),
  )
  nodes.push(...started)
  // Every node sees all three before traffic starts.
  const deadline = Date.now() + 20_000
  for (;;) {
    const seen = await Promise.all(nodes.map(async (node) => ((await (await fetch(`${node.url}/api/cluster`)).json()) as { members: unknown[] }).members.length))
    if (seen.every((count) => count === 3)) break
    if (Date.now() > deadline) throw new Error(`the fleet did not form: members seen ${seen.join(', ')}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}, 60_000)

afterAll(async () => {
  await Promise.all(nodes.map((node) => node.stop()))
  await simulator?.stop()
  await database?.drop()
})

describe('gateway key limits across the fleet', () => {
  it(`gives a ${LIMIT}-per-window key at most ${LIMIT} + one per node across three nodes, then a new window`, async () => {
    // Start just after a window opens (windows are aligned to multiples of their length), so the burst stays in one.
    const untilNext = WINDOW_MS - (Date.now() % WINDOW_MS)
    await new Promise((resolve) => setTimeout(resolve, untilNext + 50))
    const started = Date.now()
    const perNode = 50
    const results = await Promise.all(
      nodes.map(async (node) => {
        const statuses: { status: number; retryAfter: string | null }[] = []
        // Five concurrent callers per node.
        await Promise.all(
          Array.from({ length: 5 }, async () => {
            for (let index = 0; index < perNode / 5; index++) statuses.push(await chat(node, LIMITED_KEY))
          }),
        )
        return statuses
      }),
    )
    const elapsed = Date.now() - started
    expect(elapsed, 'the burst must fit in one window for this test to mean anything').toBeLessThan(WINDOW_MS - 100)
    const all = results.flat()
    const served = all.filter((result) => result.status === 200).length
    const limited = all.filter((result) => result.status === 429)
    expect(served + limited.length).toBe(3 * perNode)
    expect(served).toBeLessThanOrEqual(LIMIT + nodes.length)
    // Leases left unused when the burst ends are the only loss.
    expect(served).toBeGreaterThanOrEqual(LIMIT - 3 * nodes.length)
    // Each node served some: the limit is the fleet's, not one node's.
    for (const statuses of results) expect(statuses.some((result) => result.status === 200)).toBe(true)
    expect(Number(limited[0]!.retryAfter)).toBeGreaterThan(0)

    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS - (Date.now() % WINDOW_MS) + 50))
    expect((await chat(nodes[2]!, LIMITED_KEY)).status).toBe(200)
  }, 40_000)
})

describe('revoking a gateway key', () => {
  it('is refused by every node within a second', async () => {
    const created = (await (await fetch(`${nodes[0]!.url}/api/gateway-keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'short-lived' }) })).json()) as { id: string; key: string }
    // A new key reaches the other nodes too.
    for (const node of nodes) await expect.poll(async () => (await chat(node, created.key)).status, { timeout: 5_000, interval: 50 }).toBe(200)
    const revokedAt = Date.now()
    expect((await fetch(`${nodes[0]!.url}/api/gateway-keys/${created.id}`, { method: 'DELETE' })).status).toBe(200)
    const refusedAfter = await Promise.all(
      nodes.map(async (node) => {
        for (;;) {
          if ((await chat(node, created.key)).status === 401) return Date.now() - revokedAt
          if (Date.now() - revokedAt > 10_000) return Infinity
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      }),
    )
    expect(refusedAfter[0]).toBeLessThan(100)
    for (const elapsed of refusedAfter) expect(elapsed).toBeLessThan(1_000)
  }, 30_000)
})
