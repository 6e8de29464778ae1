/**
 * Postgres goes away under load (issue 18, item 3): its postmaster is SIGKILLed while three
 * nodes serve traffic, and comes back after SWITCHBOARD_TEST_PG_OUTAGE_S seconds (default
 * 30, the number). Meanwhile every node keeps serving and gossiping (a hold placed
 * during the outage reaches every node), says degraded on /health, and a node restarted
 * while Postgres is down starts from its peers and serves. Afterwards nothing written
 * before is lost, the leader's snapshots resume with the merged hold set, and the request
 * log takes rows again. While it is away, reading history or the request log answers 503.
 */
import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { embeddedPaths, ensureDatabase } from '@switchboard/store'
import { freePort, startPrivateServer, type PrivateServer } from '@switchboard/test-kit'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { restartGateway, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const OUTAGE_MS = Number(process.env.SWITCHBOARD_TEST_PG_OUTAGE_S ?? 30) * 1000
const SECRET = 'postgres-loss-secret-0123456789'
const BEFORE = 'sk-pgloss-revoked-before-aaaa'
const DURING = 'sk-pgloss-revoked-during-bbbb'

let server: PrivateServer
let database: TestDatabase
let simulator: SimulatorProcess
const nodes = new Map<string, { env: NodeJS.ProcessEnv; process: GatewayProcess }>()

const json = async (node: string, path: string, init?: RequestInit) => (await (await fetch(`${nodes.get(node)!.process.url}${path}`, init)).json()) as Record<string, any>
const chat = async (node: string) => {
  const response = await fetch(`${nodes.get(node)!.process.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(20_000),
  })
  await response.arrayBuffer()
  return response.status
}
const held = async (node: string) => ((await json(node, '/api/adaptive-routing/conditions')).conditions as { key_name: string }[]).map((hold) => hold.key_name).sort()

/** Steady load on every node while the test runs: every answer that is not a 200 is kept. */
function startLoad() {
  let stopped = false
  const failures: string[] = []
  let served = 0
  const done = (async () => {
    while (!stopped) {
      await Promise.all(
        [...nodes.keys()].map(async (node) => {
          if (node === 'node-c' && restarting) return
          const restartsBefore = restarts
          try {
            const status = await chat(node)
            if (status === 200) served++
            else failures.push(`${node}: ${status}`)
          } catch (error) {
            // A request in flight when the test itself SIGKILLed node-c was cut by the test, not lost by the fleet.
            if (node === 'node-c' && (restarting || restarts !== restartsBefore)) return
            failures.push(`${node}: ${String(error)}`)
          }
        }),
      )
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  })()
  return {
    failures,
    served: () => served,
    stop: async () => {
      stopped = true
      await done
    },
  }
}
let restarting = false
/** How many times the test has restarted node-c (a request that spans one was cut by the test). */
let restarts = 0

beforeAll(async () => {
  server = await startPrivateServer('pg-loss')
  database = await createTestDatabase(server.handle.url)
  simulator = await startSimulator()
  await simulator.setRules([{ key: BEFORE, fault: 'invalid_api_key' }])
  const config = {
    providers: {
      openai: {
        keys: [
          { name: 'before', value: BEFORE, models: ['*'], weight: 1 },
          { name: 'during', value: DURING, models: ['*'], weight: 1 },
          { name: 'healthy', value: 'sk-pgloss-healthy-cccc', models: ['*'], weight: 1 },
        ],
        network_config: { base_url: simulator.url },
      },
    },
  }
  const layout = ['node-a', 'node-b', 'node-c']
  const ports = await Promise.all(layout.map(() => freePort()))
  await Promise.all(
    layout.map(async (node, index) => {
      const env = {
        SWITCHBOARD_NODE_ID: node,
        SWITCHBOARD_REGION: 'eu',
        SWITCHBOARD_P2P_PORT: String(ports[index]),
        SWITCHBOARD_PEERS: ports.filter((_, other) => other !== index).map((port) => `127.0.0.1:${port}`).join(','),
        SWITCHBOARD_FLEET_SECRET: SECRET,
        SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-pgloss-${node}-`)),
        SWITCHBOARD_DATABASE_URL: database.url,
      }
      nodes.set(node, { env, process: await startGateway(config, env) })
    }),
  )
}, 120_000)

afterAll(async () => {
  for (const { process } of nodes.values()) await process.stop()
  await simulator?.stop()
  await database?.drop().catch(() => {})
  await server?.dispose()
})

describe('Postgres SIGKILLed under load, back after the outage', () => {
  it('keeps the fleet serving and gossiping, and resumes everything once it is back', async () => {
    for (const node of nodes.keys()) await expect.poll(async () => (await json(node, '/api/cluster')).members.length, { timeout: 30_000 }).toBe(3)
    const load = startLoad()
    try {
      // Before: a hold, snapshotted by the leader.
      await expect.poll(async () => (await held('node-a')).length, { timeout: 30_000 }).toBe(1)
      await expect.poll(async () => (await json('node-a', '/api/cluster')).last_snapshot?.entries ?? 0, { timeout: 40_000 }).toBeGreaterThanOrEqual(1)

      const postmaster = (JSON.parse(await readFile(embeddedPaths(server.dataDir).lock, 'utf8')) as { pid: number }).pid
      process.kill(postmaster, 'SIGKILL')
      const outageFrom = Date.now()
      for (const node of nodes.keys()) await expect.poll(async () => (await json(node, '/health')).status, { timeout: 15_000 }).toBe('degraded')

      // During: reading history or the request log says Postgres is away (503), not "see the node log" (500)...
      for (const path of ['/api/logs', '/api/adaptive-routing/history/issues']) {
        const response = await fetch(`${nodes.get('node-a')!.process.url}${path}`, { signal: AbortSignal.timeout(20_000) })
        expect(response.status, path).toBe(503)
        expect(((await response.json()) as { error: object }).error, path).toMatchObject({ code: 'store_unavailable', message: expect.stringContaining('PostgreSQL is not answering') })
      }
      // ...gossip still works (a new hold reaches everyone)...
      await simulator.setRules([{ key: BEFORE, fault: 'invalid_api_key' }, { key: DURING, fault: 'invalid_api_key' }])
      for (const node of nodes.keys()) await expect.poll(() => held(node), { timeout: 30_000 }).toEqual(['before', 'during'])
      // ...and a node restarted now starts from its peers and serves.
      restarting = true
      restarts++
      const c = nodes.get('node-c')!
      await c.process.kill('SIGKILL')
      c.process = await restartGateway(c.process.configFile, c.env)
      restarting = false
      expect(c.process.output()).toMatch(/Postgres is not answering at boot/)
      await expect.poll(() => held('node-c'), { timeout: 15_000 }).toEqual(['before', 'during'])
      expect(await chat('node-c')).toBe(200)

      // Back after the outage, on the same port.
      const left = OUTAGE_MS - (Date.now() - outageFrom)
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left))
      await ensureDatabase({ dataDir: server.dataDir, port: server.port })
      const backAt = Date.now()
      for (const node of nodes.keys()) await expect.poll(async () => (await json(node, '/health')).status, { timeout: 30_000 }).toBe('ok')
      const converged = Date.now() - backAt

      // Nothing written before is lost; the snapshot resumes with both holds; the request log takes rows again.
      const client = new pg.Client({ connectionString: database.url })
      await client.connect()
      try {
        expect((await client.query('SELECT name FROM keys ORDER BY name')).rows.map((row) => row.name)).toEqual(['before', 'during', 'healthy'])
        await expect
          .poll(async () => (await client.query<{ taken_at: Date; entries: number }>('SELECT taken_at, entries FROM held_keys_snapshots')).rows[0], { timeout: 45_000 })
          .toMatchObject({ taken_at: expect.toSatisfy((at: Date) => at.getTime() >= backAt), entries: 2 })
        const requestLog = await client.query<{ exists: boolean }>("SELECT to_regclass('request_log') IS NOT NULL AS exists")
        if (requestLog.rows[0]!.exists) {
          await expect.poll(async () => Number((await client.query('SELECT count(*) AS n FROM request_log WHERE at > $1', [new Date(backAt)])).rows[0].n), { timeout: 30_000 }).toBeGreaterThan(0)
        }
      } finally {
        await client.end()
      }
      await load.stop()
      console.log(`postgres loss: ${load.served()} requests served, ${load.failures.length} not; every node ok ${converged} ms after Postgres returned (outage ${Math.round((backAt - outageFrom) / 1000)} s)`)
      expect(load.failures, `served ${load.served()}; converged ${converged} ms after Postgres returned`).toEqual([])
      expect(load.served()).toBeGreaterThan(0)
    } finally {
      await load.stop()
    }
  }, 240_000)
})
