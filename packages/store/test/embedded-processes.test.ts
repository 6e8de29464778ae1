/**
 * The zero-setup server shared by local nodes: three processes ask for it at
 * once on a cold data directory; one starts it, all use it. Runs on a private
 * data directory and port so it never meets the test run's server.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { embeddedPaths, ensureDatabase, stopEmbeddedDatabase } from '../src/index.ts'
import { freePort, testServersRoot } from './private-server.ts'
import { runFixture } from './processes.ts'

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
    await joined.release() // did not start it, so this must not stop it
    expect((await ensureDatabase({ dataDir, port })).started).toBe(false)
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
