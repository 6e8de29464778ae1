/**
 * The fleet the dashboard tests drive: three real gateway processes (two regions) on real
 * libp2p and one real Postgres, in front of the simulator playing `npm start`'s rough day,
 * with a View and an Update admin token.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { startSimulator, type SimulatorProcess } from '../../gateway/test/harness.ts'
import { launchFleet, ROUGH_DAY_RULES, roughDayConfig, type FleetNode } from '@switchboard/test-kit'

export const UPDATE_TOKEN = 'dashboard-test-update-token-0123456789'
export const VIEW_TOKEN = 'dashboard-test-view-token-0123456789'
const SECRET = 'dashboard-test-fleet-secret-0123456789abcdef'

export interface TestFleet {
  simulator: SimulatorProcess
  nodes: { id: string; region: string; url: string; process: FleetNode }[]
  /** Calls the admin API of one node with the Update token. Answers are JSON of many shapes, read loosely by the tests: hence any. */
  admin(node: number, method: string, path: string, body?: unknown): Promise<any>
  /** One chat completion through `node` (the body as any, for the same reason). */
  chat(node: number, model: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>
  stop(): Promise<void>
}

/** What a test may change of the fleet: the simulator's rules at the start (default: `npm start`'s rough day). */
export interface FleetOptions {
  rules?: readonly unknown[]
}

export async function startFleet(options: FleetOptions = {}): Promise<TestFleet> {
  const simulator = await startSimulator()
  await simulator.setRules([...(options.rules ?? ROUGH_DAY_RULES)])
  const database: TestDatabase = await createTestDatabase()
  const stateDir = await mkdtemp(join(tmpdir(), 'sb-dashboard-fleet-'))
  const configFile = join(stateDir, 'config.json')
  await writeFile(configFile, JSON.stringify(roughDayConfig(simulator.url), null, 2))
  // npm start's launcher: real `switchboard serve` processes, each with its own p2p port and data dir.
  const fleet = await launchFleet({
    nodes: [
      { nodeId: 'node-a', region: 'eu' },
      { nodeId: 'node-b', region: 'eu' },
      { nodeId: 'node-c', region: 'us' },
    ],
    configFile,
    databaseUrl: database.url,
    fleetSecret: SECRET,
    stateDir,
    env: { LOG_LEVEL: 'warn', SWITCHBOARD_HISTORY_SNAPSHOT_MS: '3000', SWITCHBOARD_ADMIN_TOKENS: `${UPDATE_TOKEN}:update,${VIEW_TOKEN}:view` },
  })
  const nodes = fleet.nodes.map((node) => ({ id: node.nodeId, region: node.region, url: node.url, process: node }))
  const admin = async (node: number, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${nodes[node]!.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${UPDATE_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await response.text()
    if (!response.ok) throw new Error(`${method} ${path} on ${nodes[node]!.id}: ${response.status} ${text}`)
    return text === '' ? null : JSON.parse(text)
  }
  const chat = async (node: number, model: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${nodes[node]!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
    })
    return { status: response.status, body: await response.json() }
  }
  return {
    simulator,
    nodes,
    admin,
    chat,
    async stop() {
      await fleet.stop()
      await simulator.stop()
      await database.drop()
      await rm(stateDir, { recursive: true, force: true })
    },
  }
}

/** Polls `read` until `done` holds for its value (outside a test, where expect.poll is not allowed); bounded. */
export async function until<Value>(read: () => Promise<Value>, done: (value: Value) => boolean, what: string, timeoutMs = 30_000): Promise<Value> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
