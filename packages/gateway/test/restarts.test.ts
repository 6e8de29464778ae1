/**
 * Race-free stop and start (issue 18): Ctrl-C in a terminal (SIGINT, then SIGTERM from a
 * launcher) runs one shutdown, which writes the leader's last snapshot; a node on the
 * zero-setup embedded Postgres, stopped and started again at once twenty times, comes up
 * every time with the snapshot of the run before (the embedded server stops with its last
 * user and the next start waits for it to go); a node whose peers do not answer serves at
 * once and syncs holds when they appear.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stopEmbeddedDatabase } from '@switchboard/store'
import { restartGateway, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'
import { freePort } from '@switchboard/test-kit'

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const gatewayBin = join(root, 'packages/gateway/bin/switchboard.js')
const REVOKED = 'sk-restarts-revoked-aaaa'

let simulator: SimulatorProcess
beforeAll(async () => {
  simulator = await startSimulator()
  await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
})
afterAll(async () => {
  await simulator?.stop()
})

const config = () => ({
  providers: {
    openai: {
      keys: [
        { name: 'revoked', value: REVOKED, models: ['*'], weight: 1 },
        { name: 'healthy', value: 'sk-restarts-healthy-bbbb', models: ['*'], weight: 1 },
      ],
      network_config: { base_url: simulator.url },
    },
  },
})

async function json(url: string, path: string, init?: RequestInit): Promise<Record<string, any>> {
  const response = await fetch(`${url}${path}`, init)
  return (await response.json()) as Record<string, any>
}

const chat = (url: string) =>
  json(url, '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) })

/** Sends requests until the revoked key was tried (and so held); bounded. */
async function holdOn(url: string): Promise<void> {
  for (let index = 0; index < 60; index++) {
    await chat(url)
    if ((await json(url, '/api/adaptive-routing/conditions')).count > 0) return
  }
  throw new Error('the revoked key was never tried')
}

/** The signal a terminal's Ctrl-C sends the group, then the launcher's SIGTERM right behind it. */
async function ctrlC(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)))
  child.kill('SIGINT')
  await new Promise((resolveWait) => setTimeout(resolveWait, 50))
  child.kill('SIGTERM')
  return exited
}

describe('a second signal during shutdown', () => {
  it('runs one shutdown: exit 0 and the last hold snapshot written', async () => {
    const gateway = await startGateway(config(), { SWITCHBOARD_FLEET_SECRET: 'restarts-secret-0123456789', SWITCHBOARD_P2P_PORT: String(await freePort()), SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), 'sb-restarts-')) })
    try {
      await holdOn(gateway.url)
      // A request in flight keeps the drain going while the second signal arrives.
      await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }, { provider: 'openai', latency_ms: 1_500 }])
      const inFlight = chat(gateway.url)
      await expect.poll(() => simulator.inFlight(), { timeout: 5_000 }).toBe(1)
      const signalled = Date.now()
      const exited = gateway.kill('SIGINT')
      await new Promise((resolveWait) => setTimeout(resolveWait, 100))
      void gateway.kill('SIGTERM')
      expect((await inFlight).choices).toHaveLength(1)
      expect(await exited).toBe(0)
      await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
      expect(gateway.output()).toContain('already shutting down')
      expect(gateway.output()).not.toMatch(/shutdown failed|could not write the last hold snapshot/)
      const client = new pg.Client({ connectionString: gateway.databaseUrl })
      await client.connect()
      try {
        const snapshot = await client.query<{ taken_at: Date; entries: number }>('SELECT taken_at, entries FROM held_keys_snapshots')
        expect(snapshot.rows[0]!.taken_at.getTime()).toBeGreaterThanOrEqual(signalled - 1_000)
        expect(snapshot.rows[0]!.entries).toBe(1)
      } finally {
        await client.end()
      }
    } finally {
      await gateway.stop()
    }
  })
})

describe('twenty stop/start cycles on the embedded Postgres, back to back', () => {
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'sb-cycles-'))
  })
  afterAll(async () => {
    await stopEmbeddedDatabase({ dataDir: join(directory, '.switchboard', 'postgres') }).catch(() => {})
    await rm(directory, { recursive: true, force: true })
  })

  it('comes up every time with the snapshot the run before wrote on its way out', async () => {
    const configFile = join(directory, 'config.json')
    await writeFile(configFile, JSON.stringify(config()))
    const cycles = 20
    let previousExit = 0
    const began = Date.now()
    for (let cycle = 0; cycle < cycles; cycle++) {
      // cwd is the scratch directory, so the node starts (or joins) the embedded server under it.
      const node = await startIn(directory, configFile)
      try {
        const view = await json(node.url, '/api/cluster')
        if (cycle === 0) await holdOn(node.url)
        else {
          expect(Date.parse(view.last_snapshot.taken_at), `cycle ${cycle}`).toBeGreaterThanOrEqual(previousExit - 1_000)
          expect((await json(node.url, '/api/adaptive-routing/conditions')).count, `cycle ${cycle}`).toBe(1)
        }
        previousExit = Date.now()
        expect(await ctrlC(node.child), `cycle ${cycle}:\n${node.output()}`).toBe(0)
        expect(node.output()).not.toMatch(/shutdown failed|could not write the last hold snapshot|could not start/)
      } finally {
        node.child.kill('SIGKILL')
      }
    }
    // About 2 s a cycle on an idle 2-core machine (a standalone node loads no libp2p); a loaded one needs far more.
    console.log(`one node: ${cycles} stop/start cycles in ${((Date.now() - began) / 1000).toFixed(1)} s`)
  }, 420_000)
})

describe('a node whose peers do not answer', () => {
  it('serves at once, and syncs holds when a peer appears', async () => {
    const secret = 'restarts-lonely-secret-0123456789'
    const [portA, portB] = [await freePort(), await freePort()]
    const envA = { SWITCHBOARD_NODE_ID: 'lonely-a', SWITCHBOARD_FLEET_SECRET: secret, SWITCHBOARD_P2P_PORT: String(portA), SWITCHBOARD_PEERS: `127.0.0.1:${portB}`, SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), 'sb-lonely-a-')) }
    const a: GatewayProcess = await startGateway(config(), envA)
    let b: GatewayProcess | undefined
    try {
      expect(a.output()).toContain('no peer answered yet: serving now')
      await holdOn(a.url)
      const envB = { ...envA, SWITCHBOARD_NODE_ID: 'lonely-b', SWITCHBOARD_P2P_PORT: String(portB), SWITCHBOARD_PEERS: `127.0.0.1:${portA}`, SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), 'sb-lonely-b-')), SWITCHBOARD_DATABASE_URL: a.databaseUrl }
      b = await restartGateway(a.configFile, envB)
      await expect.poll(async () => (await json(b!.url, '/api/adaptive-routing/conditions')).count, { timeout: 10_000 }).toBe(1)
      // And the other way: a hold placed on the later node reaches the first.
      await json(a.url, '/api/adaptive-routing/conditions/clear', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      await expect.poll(async () => (await json(b!.url, '/api/adaptive-routing/conditions')).count, { timeout: 10_000 }).toBe(0)
    } finally {
      await b?.stop()
      await a.stop()
    }
  }, 60_000)
})

/** `switchboard serve` with `cwd` as its working directory; resolves once it listens. */
async function startIn(cwd: string, configFile: string): Promise<{ url: string; child: ChildProcess; output(): string }> {
  const port = await freePort()
  const child = spawn(process.execPath, [gatewayBin, 'serve', '--config', configFile, '--port', String(port)], { cwd, env: { ...process.env, LOG_LEVEL: 'info', SWITCHBOARD_NODE_ID: 'cycling', SWITCHBOARD_DATABASE_URL: '', DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  await new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not listen within 30 s:\n${output}`)), 30_000)
    const check = () => {
      if (output.includes('switchboard listening on')) {
        clearTimeout(timer)
        resolveReady()
      }
    }
    child.stdout!.on('data', check)
    child.stderr!.on('data', check)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${code} before listening:\n${output}`))
    })
  })
  return { url: `http://127.0.0.1:${port}`, child, output: () => output }
}
