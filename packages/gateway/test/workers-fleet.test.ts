/**
 * Three nodes of two workers each (issue 38) are one fleet of three members: every worker of
 * every node sees the same three, and a hold placed on one node reaches both workers of the
 * others (the fleet worker carries it to the fleet, its primary to its sibling).
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { onWorker, revokedAndHealthyConfig, sendOnce, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'
import { freePort } from '@switchboard/test-kit'

const REVOKED = 'sk-workers-fleet-revoked-aaaa'
const SECRET = 'a-fleet-secret-for-the-workers-fleet-test'
const NODES = ['node-a', 'node-b', 'node-c'] as const

let simulator: SimulatorProcess
let database: TestDatabase
const nodes = new Map<string, GatewayProcess>()

beforeAll(async () => {
  simulator = await startSimulator()
  database = await createTestDatabase()
  const config = revokedAndHealthyConfig(simulator.url, REVOKED, 'sk-workers-fleet-healthy-bbbb')
  const ports = await Promise.all(NODES.map(() => freePort()))
  const started = await Promise.all(
    NODES.map(async (node, index) => {
      const env = {
        SWITCHBOARD_WORKERS: '2',
        SWITCHBOARD_NODE_ID: node,
        SWITCHBOARD_P2P_PORT: String(ports[index]),
        SWITCHBOARD_PEERS: ports.filter((_, other) => other !== index).map((port) => `127.0.0.1:${port}`).join(','),
        SWITCHBOARD_FLEET_SECRET: SECRET,
        SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-${node}-`)),
        SWITCHBOARD_DATABASE_URL: database.url,
      }
      return [node, await startGateway(config, env, 90_000)] as const
    }),
  )
  for (const [node, process] of started) nodes.set(node, process)
}, 120_000)

afterAll(async () => {
  for (const process of nodes.values()) await process.stop()
  await simulator?.stop()
  await database?.drop()
})

const url = (node: string) => nodes.get(node)!.url
const members = async (node: string, worker: number) => ((await onWorker(worker, () => sendOnce(url(node), 'GET', '/api/cluster'))).json.members as { node_id: string }[]).map((member) => member.node_id).sort()

describe('three nodes of two workers each', () => {
  it('form one fleet of three members, as every worker sees it', async () => {
    for (const node of NODES) for (const worker of [1, 2]) await expect.poll(() => members(node, worker), { timeout: 30_000 }).toEqual([...NODES])
  }, 120_000)

  it('carry a hold placed on one node to both workers of the others', async () => {
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    const chat = () => sendOnce(url('node-a'), 'POST', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    for (let index = 0; index < 16 && !(await simulator.requests()).some((entry) => entry.key_suffix === 'aaaa'); index++) expect((await chat()).status).toBe(200)
    for (const node of ['node-b', 'node-c'])
      for (const worker of [1, 2]) await expect.poll(async () => (await onWorker(worker, () => sendOnce(url(node), 'GET', '/api/adaptive-routing/conditions'))).json.count, { timeout: 15_000 }).toBe(1)
  }, 60_000)
})
