/**
 * Test-only embedded servers: each in its own data directory on a free port,
 * owned by one process (the test run), and swept when that process died
 * without stopping it. Concurrent test runs in one checkout never share one.
 */
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureDatabase, isRunning, stopEmbeddedDatabase, type DatabaseHandle } from '@switchboard/store'
import { freePort } from '../ports.ts'

/** Where test servers live: under the repo's ignored `.switchboard/`. */
export const testServersRoot = resolve(fileURLToPath(new URL('../../../../.switchboard/test-servers', import.meta.url)))

/** A private running server and how to dispose of it. */
export interface PrivateServer {
  handle: DatabaseHandle
  dataDir: string
  port: number
  /** Stops the server and deletes its files. */
  dispose(): Promise<void>
}

/** Starts a fresh server owned by this process (cold: runs initdb). */
export async function startPrivateServer(label: string): Promise<PrivateServer> {
  await sweepOrphans()
  const directory = join(testServersRoot, `${process.pid}-${label}-${Date.now().toString(36)}`)
  await mkdir(directory, { recursive: true })
  const dataDir = join(directory, 'postgres')
  const port = await freePort()
  const handle = await ensureDatabase({ dataDir, port })
  return {
    handle,
    dataDir,
    port,
    async dispose() {
      await stopEmbeddedDatabase({ dataDir })
      await rm(directory, { recursive: true, force: true })
    },
  }
}

/** Stops and deletes servers left by test processes that died before cleaning up. */
async function sweepOrphans(): Promise<void> {
  for (const entry of await readdir(testServersRoot).catch(() => [])) {
    const owner = Number(entry.split('-')[0])
    // A test process that is gone, or a zombie (dead but not reaped), owns nothing any more.
    if (!Number.isInteger(owner) || owner === process.pid || isRunning(owner)) continue
    const directory = join(testServersRoot, entry)
    await stopEmbeddedDatabase({ dataDir: join(directory, 'postgres') }).catch(() => {})
    await rm(directory, { recursive: true, force: true })
  }
}

