/**
 * A fleet of ten real gateway processes (issue 19) on real libp2p and one real Postgres, in two
 * regions, joined through three seeds the way a headless Service lists a few pods: every node
 * finds every other, each region has one leader (its lowest node id) on every node, a key
 * refused on one node is held on all ten, and a SIGKILLed leader is dropped by all nine others
 * and its region's leadership passes to the next node. Timing is reported, never asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { freePort, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const SECRET = 'fleet-ten-test-secret-0123456789abcdef'
const REVOKED = 'sk-ten-revoked-cccc'
const SIZE = 10

let simulator: SimulatorProcess
let database: TestDatabase
const nodes = new Map<string, GatewayProcess>()
const names = Array.from({ length: SIZE }, (_, index) => `node-${String(index).padStart(2, '0')}`)
const regionOf = (name: string) => (names.indexOf(name) % 2 === 0 ? 'eu' : 'us')

interface ClusterView {
  members: { node_id: string; region: string }[]
  leaders: Record<string, string>
}

async function getJson<T>(node: string, path: string): Promise<T> {
  const response = await fetch(`${nodes.get(node)!.url}${path}`)
  return (await response.json()) as T
}
const view = (node: string) => getJson<ClusterView>(node, '/api/cluster')
const memberIds = async (node: string) => (await view(node)).members.map((member) => member.node_id).sort()
const heldCount = async (node: string) => (await getJson<{ count: number }>(node, '/api/adaptive-routing/conditions')).count

async function chat(node: string): Promise<void> {
  const response = await fetch(`${nodes.get(node)!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  })
  expect(response.status).toBe(200)
  await response.arrayBuffer()
}

beforeAll(async () => {
  simulator = await startSimulator()
  database = await createTestDatabase()
  const config = {
    providers: {
      openai: {
        keys: [
          { name: 'revoked', value: REVOKED, models: ['*'], weight: 1 },
          { name: 'healthy', value: 'sk-ten-healthy-dddd', models: ['*'], weight: 1 },
        ],
        network_config: { base_url: simulator.url },
      },
    },
  }
  const ports = await Promise.all(names.map(() => freePort()))
  const seeds = ports.slice(0, 3).map((port) => `127.0.0.1:${port}`)
  const started = Date.now()
  // Ten gateways starting at once on a shared 2-core machine: each may take a while to listen.
  await Promise.all(
    names.map(async (name, index) => {
      const env = {
        SWITCHBOARD_NODE_ID: name,
        SWITCHBOARD_REGION: regionOf(name),
        SWITCHBOARD_P2P_PORT: String(ports[index]),
        SWITCHBOARD_PEERS: seeds.filter((seed) => seed !== `127.0.0.1:${ports[index]}`).join(','),
        SWITCHBOARD_FLEET_SECRET: SECRET,
        SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-ten-${name}-`)),
        SWITCHBOARD_DATABASE_URL: database.url,
      }
      nodes.set(name, await startGateway(config, env, 90_000))
    }),
  )
  console.log(`fleet of ${SIZE}: every gateway listening ${Date.now() - started} ms after the first spawn`)
}, 110_000)

afterAll(async () => {
  await Promise.all([...nodes.values()].map((node) => node.stop()))
  await simulator?.stop()
  await database?.drop()
}, 60_000)

describe('a fleet of ten gateway nodes in two regions', () => {
  it('finds every member through three seeds and agrees on one leader per region', async () => {
    const started = Date.now()
    for (const name of names) await expect.poll(() => memberIds(name), { timeout: 60_000, interval: 250 }).toEqual(names)
    console.log(`fleet of ${SIZE}: full membership on every node ${Date.now() - started} ms after the last listened`)
    for (const name of names) {
      const seen = await view(name)
      expect(seen.leaders).toEqual({ eu: 'node-00', us: 'node-01' })
      expect(seen.members.map((member) => `${member.node_id}@${member.region}`).sort()).toEqual(names.map((other) => `${other}@${regionOf(other)}`))
    }
  }, 70_000)

  it('holds a key refused on one node on all ten', async () => {
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    let heldAt = 0
    for (let attempt = 0; attempt < 60 && heldAt === 0; attempt++) {
      await chat('node-07')
      if ((await heldCount('node-07')) > 0) heldAt = Date.now()
    }
    expect(heldAt).toBeGreaterThan(0)
    for (const name of names) await expect.poll(() => heldCount(name), { timeout: 15_000, interval: 100 }).toBe(1)
    console.log(`fleet of ${SIZE}: hold on every node ${Date.now() - heldAt} ms after it was placed (polled)`)
  }, 60_000)

  it('drops a SIGKILLed leader on every other node and hands its region to the next node', async () => {
    const killedAt = Date.now()
    expect(await nodes.get('node-00')!.kill('SIGKILL')).toBe(null)
    const rest = names.filter((name) => name !== 'node-00')
    for (const name of rest) await expect.poll(() => memberIds(name), { timeout: 30_000, interval: 100 }).toEqual(rest)
    console.log(`fleet of ${SIZE}: kill seen by every node within ${Date.now() - killedAt} ms (polled)`)
    for (const name of rest) expect((await view(name)).leaders).toEqual({ eu: 'node-02', us: 'node-01' })
    nodes.delete('node-00')
  }, 45_000)
})
