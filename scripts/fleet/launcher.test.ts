/**
 * `npm start` as a user runs it (issue 18): a node that dies is reported and started again, and
 * so is the embedded PostgreSQL; Ctrl-C in the terminal (SIGINT to the whole process group) stops everything with exit 0
 * and the leaders' last hold snapshots written, and starting again at once works, back to
 * back. The launcher runs in its own process group, on a state directory of its own
 * (SWITCHBOARD_STATE_DIR), so it never meets the checkout's own embedded Postgres.
 *
 * `npm test` runs 5 cycles (about 5 s each on an idle 2-core machine: a launcher, the
 * simulator and two fleet nodes start each time); SWITCHBOARD_START_CYCLES=20 runs the
 * twenty of the issue, whose figures are in README.md ("Faults").
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { ensureDatabase, stopEmbeddedDatabase } from '@switchboard/store'
import { freePort } from '@switchboard/test-kit'

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))

interface Launcher {
  child: ChildProcess
  output(): string
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>
}

function launch(stateDir: string, port: number): Launcher {
  // detached: its own process group, as a terminal gives a command it runs.
  const child = spawn(process.execPath, [join(root, 'scripts/start.mjs'), '--nodes', '2', '--port', String(port), '--no-load'], {
    cwd: root,
    detached: true,
    env: { ...process.env, SWITCHBOARD_STATE_DIR: stateDir, SWITCHBOARD_DATABASE_URL: '', DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  return {
    child,
    output: () => output,
    waitFor: async (pattern, timeoutMs) => {
      const deadline = Date.now() + timeoutMs
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`)
        if (child.exitCode !== null) throw new Error(`the launcher exited with ${child.exitCode}:\n${output}`)
        await new Promise((resolveWait) => setTimeout(resolveWait, 100))
      }
    },
  }
}

/** Ctrl-C in the terminal: SIGINT to the whole group. Resolves with the launcher's exit code. */
async function ctrlC(launcher: Launcher): Promise<number | null> {
  const exited = new Promise<number | null>((resolveExit) => launcher.child.once('exit', (code) => resolveExit(code)))
  process.kill(-launcher.child.pid!, 'SIGINT')
  return exited
}

/** The pid of the gateway process serving HTTP on `port` (its command line names the port). */
async function gatewayPid(port: number): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const command = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (command.includes('switchboard.js\0serve') && command.includes(`--port\0${port}\0`)) return Number(entry)
  }
  return undefined
}

describe('npm start', () => {
  let stateDir: string
  const running: Launcher[] = []
  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'sb-launcher-'))
  })
  afterAll(async () => {
    for (const launcher of running) if (launcher.child.exitCode === null) process.kill(-launcher.child.pid!, 'SIGKILL')
    await stopEmbeddedDatabase({ dataDir: join(stateDir, 'postgres') }).catch(() => {})
    await rm(stateDir, { recursive: true, force: true })
  })

  const cycles = Number(process.env.SWITCHBOARD_START_CYCLES ?? 5)
  it(`reports a node that dies and starts it again; Ctrl-C then a restart at once, ${cycles} times back to back, each stop writing the last snapshot`, async () => {
    const port = await freePort()
    const url = (offset: number) => `http://127.0.0.1:${port + offset}`
    const timings: string[] = []
    for (let cycle = 0; cycle < cycles; cycle++) {
      const began = Date.now()
      const launcher = launch(stateDir, port)
      running.push(launcher)
      await launcher.waitFor(/Switchboard fleet is running/, 90_000)
      const up = Date.now() - began
      if (cycle === 0) {
        const pid = await gatewayPid(port + 1)
        expect(pid).toBeDefined()
        process.kill(pid!, 'SIGKILL')
        await launcher.waitFor(/\[node-2\] exited unexpectedly \(signal SIGKILL\)/, 10_000)
        await launcher.waitFor(/\[node-2\] is back on/, 60_000)
        expect((await fetch(`${url(1)}/health`)).status).toBe(200)
        // The embedded PostgreSQL dies: the launcher starts it again and the nodes reconnect.
        const postmaster = Number((await readFile(join(stateDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
        process.kill(postmaster, 'SIGKILL')
        await launcher.waitFor(/\[postgres\] the embedded PostgreSQL is not answering; starting it again if it is gone/, 15_000)
        await launcher.waitFor(/\[postgres\] is back \(in/, 60_000)
        for (const offset of [0, 1]) await expect.poll(async () => databaseStatus(url(offset)), { timeout: 30_000 }).toBe('ok')
      }
      for (const offset of [0, 1]) expect((await fetch(`${url(offset)}/health`)).status).toBe(200)
      // A hold to snapshot: the rough day's revoked key, held once a request tries it.
      const held = await holdRevokedKey(url(0))
      // Both nodes lead their region (node-1 eu, node-2 us) and hold it once gossip lands.
      await expect.poll(async () => heldCount(url(1)), { timeout: 10_000 }).toBe(held)
      const stoppedAt = Date.now()
      expect(await ctrlC(launcher), launcher.output()).toBe(0)
      const down = Date.now() - stoppedAt
      expect(launcher.output()).not.toMatch(/shutdown failed|could not write the last hold snapshot|could not start/)
      // The demo database is fresh at each start, so the last snapshot is read now, between the
      // stop and the next start (which then follows this read's own stop of the embedded server at once).
      const snapshot = await lastSnapshot(stateDir)
      expect(snapshot.takenAt, `cycle ${cycle}`).toBeGreaterThanOrEqual(stoppedAt - 1_000)
      expect(snapshot.held, `cycle ${cycle}`).toBe(held)
      timings.push(`${(up / 1000).toFixed(1)}+${(down / 1000).toFixed(1)}`)
    }
    console.log(`npm start: ${cycles} cycles, seconds up + seconds to stop: ${timings.join(' ')}`)
  }, 60_000 + cycles * 60_000)
})

const chat = (url: string) =>
  fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) }).then((response) => response.arrayBuffer())
const databaseStatus = async (url: string) => ((await (await fetch(`${url}/health`)).json()) as { database: { status: string } }).database.status
const heldCount = async (url: string) => ((await (await fetch(`${url}/api/adaptive-routing/conditions`)).json()) as { count: number }).count

/** Sends requests until a key is held (the revoked one: every request tries it until then); bounded. */
async function holdRevokedKey(url: string): Promise<number> {
  for (let index = 0; index < 60; index++) {
    await chat(url)
    const count = await heldCount(url)
    if (count > 0) return count
  }
  throw new Error('no key was held after 60 requests')
}

/** The demo database's last hold snapshot: when it was taken and how many active holds it has. */
async function lastSnapshot(stateDir: string): Promise<{ takenAt: number; held: number }> {
  const server = await ensureDatabase({ dataDir: join(stateDir, 'postgres') })
  try {
    const url = new URL(server.url)
    url.pathname = '/switchboard_demo'
    const client = new pg.Client({ connectionString: url.toString() })
    await client.connect()
    try {
      const info = await client.query<{ taken_at: Date }>('SELECT taken_at FROM held_keys_snapshots')
      const held = await client.query<{ count: string }>("SELECT count(*) FROM held_keys WHERE entry->>'state' = 'held'")
      return { takenAt: info.rows[0]?.taken_at.getTime() ?? 0, held: Number(held.rows[0]!.count) }
    } finally {
      await client.end()
    }
  } finally {
    await server.release()
  }
}
