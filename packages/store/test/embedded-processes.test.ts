/**
 * The zero-setup server shared by local nodes: three processes ask for it at
 * once on a cold data directory; one starts it, all use it; it stops only when
 * its last live user releases it; a dying or zombie server is never taken for a
 * running one (issue 18). Runs on a private data directory and port so it never
 * meets the test run's server.
 */
import { existsSync } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { embeddedPaths, ensureDatabase, stopEmbeddedDatabase, type DatabaseHandle } from '../src/index.ts'
import { freePort, testServersRoot } from '@switchboard/test-kit'
import { runFixture } from './processes.ts'
import { makeZombie } from './zombie.ts'

async function answers(handle: DatabaseHandle): Promise<boolean> {
  const client = new pg.Client({ connectionString: handle.url, connectionTimeoutMillis: 2_000 })
  client.on('error', () => {})
  try {
    await client.connect()
    return (await client.query('SELECT 1 AS one')).rows.length === 1
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

async function lockedPid(dataDir: string): Promise<number> {
  return (JSON.parse(await readFile(embeddedPaths(dataDir).lock, 'utf8')) as { pid: number }).pid
}

interface ChildOutcome {
  url: string
  started: boolean
  connected: boolean
}

describe('embedded postgres shared by local nodes', () => {
  const directory = join(testServersRoot, `${process.pid}-shared-${Date.now().toString(36)}`)
  const dataDir = join(directory, 'postgres')
  let port: number
  beforeAll(async () => {
    await mkdir(directory, { recursive: true })
    port = await freePort()
  })
  afterAll(async () => {
    await stopEmbeddedDatabase({ dataDir })
    await rm(directory, { recursive: true, force: true })
  })

  it('is started by exactly one of several processes and shared by all', async () => {
    const outcomes = await Promise.all([1, 2, 3].map(() => runFixture<ChildOutcome>('ensure-child', [dataDir, String(port)])))
    expect(outcomes.filter((outcome) => outcome.started)).toHaveLength(1)
    expect(new Set(outcomes.map((outcome) => outcome.url)).size).toBe(1)
    expect(outcomes.every((outcome) => outcome.connected)).toBe(true)
  })

  it('outlives the process that started it: a later node joins without starting', async () => {
    const joined = await ensureDatabase({ dataDir, port })
    expect(joined).toMatchObject({ embedded: true, started: false })
    expect(await answers(joined)).toBe(true)
    await joined.release()
  })

  it('stops only when its last live user releases it', async () => {
    const first = await ensureDatabase({ dataDir, port })
    const second = await ensureDatabase({ dataDir, port })
    await first.release()
    await first.release() // idempotent: still one user left
    expect(await answers(second)).toBe(true)
    await second.release()
    expect(await answers(second)).toBe(false)
    expect(existsSync(embeddedPaths(dataDir).lock)).toBe(false)
    const fresh = await ensureDatabase({ dataDir, port })
    expect(fresh.started).toBe(true)
    await fresh.release()
  })

  it('keeps running for a user that joins while the last one releases it, every time', async () => {
    for (let round = 0; round < 5; round++) {
      const leaving = await ensureDatabase({ dataDir, port })
      const [arriving] = await Promise.all([ensureDatabase({ dataDir, port }), leaving.release()])
      expect(await answers(arriving), `round ${round}`).toBe(true)
      await arriving.release()
    }
  })

  it('waits for a server being stopped, then starts a fresh one', async () => {
    const running = await ensureDatabase({ dataDir, port })
    const stopper = spawn('sleep', ['30'])
    const paths = embeddedPaths(dataDir)
    const state = JSON.parse(await readFile(paths.lock, 'utf8')) as object
    await writeFile(paths.lock, JSON.stringify({ ...state, phase: 'stopping', owner: stopper.pid }))
    const arriving = ensureDatabase({ dataDir, port })
    await new Promise((resolve) => setTimeout(resolve, 500))
    await stopEmbeddedDatabase({ dataDir })
    stopper.kill('SIGKILL')
    const handle = await arriving
    expect(handle.started).toBe(true)
    expect(await answers(handle)).toBe(true)
    await running.release()
    await handle.release()
  })

  it('starts a fresh server right after its postmaster is SIGKILLed', async () => {
    await runFixture<ChildOutcome>('ensure-child', [dataDir, String(port)])
    process.kill(await lockedPid(dataDir), 'SIGKILL')
    const handle = await ensureDatabase({ dataDir, port })
    expect(handle.started).toBe(true)
    expect(await answers(handle)).toBe(true)
    await handle.release()
  })

  it.skipIf(!existsSync('/proc/self/stat'))('takes a zombie postmaster for dead: removes its pid file and starts a fresh server', async () => {
    const handle = await ensureDatabase({ dataDir, port })
    const paths = embeddedPaths(dataDir)
    const pidFile = await readFile(join(dataDir, 'postmaster.pid'), 'utf8')
    await stopEmbeddedDatabase({ dataDir })
    await handle.release()
    const zombie = await makeZombie()
    try {
      // What a SIGKILLed postmaster that PID 1 has not reaped leaves: its pid file and a running lock.
      await writeFile(join(dataDir, 'postmaster.pid'), pidFile.replace(/^\d+/, String(zombie.pid)))
      await writeFile(paths.lock, JSON.stringify({ pid: zombie.pid, port, phase: 'running' }))
      const fresh = await ensureDatabase({ dataDir, port, startTimeoutMs: 20_000 })
      expect(fresh.started).toBe(true)
      expect(await answers(fresh)).toBe(true)
      await fresh.release()
    } finally {
      zombie.release()
    }
  })

  it('breaks the lock of a node that died mid-start and starts the server itself', async () => {
    await stopEmbeddedDatabase({ dataDir })
    // A pid far above any Linux pid_max: certainly not alive.
    await writeFile(embeddedPaths(dataDir).lock, JSON.stringify({ pid: 2 ** 30, port, phase: 'starting' }))
    const handle = await ensureDatabase({ dataDir, port })
    expect(handle.started).toBe(true)
  })

  it('refuses to initialise over a directory that holds something else', async () => {
    const foreign = join(directory, 'not-postgres')
    await mkdir(foreign, { recursive: true })
    await writeFile(join(foreign, 'notes.txt'), 'mine')
    await expect(ensureDatabase({ dataDir: foreign, port: await freePort() })).rejects.toThrow(/not empty/)
  })
})
