/**
 * Ten real gateway nodes (issue 19): `switchboard serve` processes on real libp2p and one real
 * Postgres, in three regions, joined through three seeds as from a headless Service. Every node
 * sees all ten members and the same leader per region; a key refused on one node is held on all
 * ten, and released on all ten from another; a SIGKILLed region leader is dropped by the nine
 * others, its region's next node leads everywhere, and each region keeps exactly one leader.
 * Bounded: every wait polls with a deadline, and every process is stopped at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { chatStatus, revokedAndHealthyConfig, sendUntilHeld, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'
import { freePort } from '@switchboard/test-kit'

const SECRET = 'fleet-ten-secret-0123456789abcdef'
const REVOKED = 'sk-fleet-ten-revoked-tttt'
const REGIONS = ['eu', 'us', 'ap'] as const
const SIZE = 10

let simulator: SimulatorProcess
let database: TestDatabase
const names = Array.from({ length: SIZE }, (_, index) => `node-${String(index).padStart(2, '0')}`)
const regionOf = (name: string) => REGIONS[names.indexOf(name) % REGIONS.length]!
const nodes = new Map<string, GatewayProcess>()

async function api(node: string, method: string, path: string): Promise<Record<string, any>> {
  const response = await fetch(`${nodes.get(node)!.url}${path}`, { method, signal: AbortSignal.timeout(10_000) })
  return (await response.json()) as Record<string, any>
}
const heldCount = async (node: string) => (await api(node, 'GET', '/api/adaptive-routing/conditions')).count as number
const view = async (node: string) => {
  const cluster = await api(node, 'GET', '/api/cluster')
  return { members: (cluster.members as { node_id: string }[]).map((member) => member.node_id).sort(), leaders: cluster.leaders as Record<string, string> }
}
/** The leader of each region among `alive`: its lowest node id. */
const expectedLeaders = (alive: string[]) => {
  const leaders: Record<string, string> = {}
  for (const name of alive) {
    const region = regionOf(name)
    if (leaders[region] === undefined || name < leaders[region]) leaders[region] = name
  }
  return leaders
}
/** Polls until every node in `alive` lists exactly `alive` and names the expected leaders. */
async function fleetAgrees(alive: string[], timeout: number): Promise<void> {
  const wanted = { members: [...alive].sort(), leaders: expectedLeaders(alive) }
  for (const node of alive) await expect.poll(() => view(node), { timeout, interval: 250 }).toEqual(wanted)
}

/** Sends requests to `node` until the revoked key was tried there (and so held); every answer is a 200. */
const holdOn = (node: string) =>
  sendUntilHeld(async () => expect(await chatStatus(nodes.get(node)!.url)).toBe(200), async () => (await heldCount(node)) > 0, node)

beforeAll(async () => {
  simulator = await startSimulator()
  database = await createTestDatabase()
  const config = revokedAndHealthyConfig(simulator.url, REVOKED, 'sk-fleet-ten-healthy-hhhh')
  const ports = await Promise.all(names.map(() => freePort()))
  const seeds = ports.slice(0, 3).map((port) => `127.0.0.1:${port}`)
  // Ten nodes starting at once on two shared cores: a generous, bounded start-up deadline.
  const started = await Promise.allSettled(
    names.map(async (name, index) => {
      const env = {
        SWITCHBOARD_NODE_ID: name,
        SWITCHBOARD_REGION: regionOf(name),
        SWITCHBOARD_P2P_PORT: String(ports[index]),
        SWITCHBOARD_PEERS: seeds.filter((seed) => !seed.endsWith(`:${ports[index]}`)).join(','),
        SWITCHBOARD_FLEET_SECRET: SECRET,
        SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-ten-${name}-`)),
        SWITCHBOARD_DATABASE_URL: database.url,
      }
      nodes.set(name, await startGateway(config, env, 90_000))
    }),
  )
  const failed = started.find((outcome) => outcome.status === 'rejected')
  if (failed) throw (failed as PromiseRejectedResult).reason
}, 120_000)

afterAll(async () => {
  await Promise.all([...nodes.values()].map((node) => node.stop()))
  await simulator?.stop()
  await database?.drop()
}, 60_000)

describe('a fleet of ten gateway nodes in three regions', () => {
  it('every node sees all ten members and the same leader of each region', async () => {
    await fleetAgrees(names, 30_000)
    expect(expectedLeaders(names)).toEqual({ eu: 'node-00', us: 'node-01', ap: 'node-02' })
  }, 60_000)

  it('holds a key refused on one node on all ten, and releases it on all ten from another', async () => {
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    await holdOn('node-07')
    for (const node of names) await expect.poll(() => heldCount(node), { timeout: 10_000, interval: 100 }).toBe(1)
    const cleared = await api('node-04', 'POST', '/api/adaptive-routing/conditions/clear')
    expect(cleared.count).toBe(1)
    for (const node of names) await expect.poll(() => heldCount(node), { timeout: 10_000, interval: 100 }).toBe(0)
  }, 60_000)

  it('drops a SIGKILLed region leader on every node; its region gets one new leader everywhere', async () => {
    const victim = 'node-00'
    expect(await nodes.get(victim)!.kill('SIGKILL')).toBe(null)
    const alive = names.filter((name) => name !== victim)
    await fleetAgrees(alive, 20_000)
    expect(expectedLeaders(alive).eu).toBe('node-03')
    // Still one fleet: a hold made after the kill reaches the nine others.
    await holdOn('node-09')
    for (const node of alive) await expect.poll(() => heldCount(node), { timeout: 10_000, interval: 100 }).toBe(1)
  }, 60_000)
})
