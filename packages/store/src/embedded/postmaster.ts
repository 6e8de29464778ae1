/**
 * What a data directory's server is doing, from its `postmaster.pid` and a real
 * connection: a server counts as usable only once it answers a query, never from the pid
 * file alone (it may be starting, shutting down, or a zombie).
 */
import { readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import { isRunning } from './processes.ts'

/**
 * The data directory's postmaster when one runs (not a zombie, really a postgres): its pid, port and
 * status (line 8 of postmaster.pid: `starting`, `ready`, `stopping` or `standby`; PostgreSQL's pidfile.h); else undefined.
 */
export async function livePostmaster(dataDir: string) {
  const lines = await postmasterLines(dataDir)
  if (lines === undefined) return undefined
  const pid = Number(lines[0])
  if (!isRunning(pid) || !(await mayBePostgres(pid))) return undefined
  const port = Number(lines[3])
  return { pid, port: Number.isInteger(port) && port > 0 ? port : undefined, status: (lines[7] ?? '').trim() || 'starting' }
}

/**
 * Removes a postmaster.pid whose server is gone. A SIGKILLed postmaster leaves it behind;
 * PostgreSQL clears that itself, but not when the dead pid is a zombie (its own `kill(pid,
 * 0)` check calls it alive, and it refuses to start).
 */
export async function clearStalePidFile(dataDir: string): Promise<boolean> {
  if ((await postmasterLines(dataDir)) === undefined || (await livePostmaster(dataDir)) !== undefined) return false
  await rm(join(dataDir, 'postmaster.pid'), { force: true })
  return true
}

/** True when the server at `url` answers a query within `timeoutMs`. */
export async function answers(url: string, timeoutMs = 2_000): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs })
  // A server going down mid-probe emits 'error' on the client; the probe just fails.
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/** False when the pid surely is not a postgres (reused after a reboot, or a zombie with no command line); true when unsure (no /proc). */
export async function mayBePostgres(pid: number): Promise<boolean> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).includes('postgres')
  } catch (error) {
    return (error as { code?: unknown }).code !== 'ENOENT' || !(await hasProc())
  }
}

function hasProc(): Promise<boolean> {
  return readFile('/proc/self/stat').then(() => true, () => false)
}

function postmasterLines(dataDir: string): Promise<string[] | undefined> {
  return readFile(join(dataDir, 'postmaster.pid'), 'utf8').then((text) => text.split('\n'), () => undefined)
}

/** True when nothing listens on 127.0.0.1:port. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const server = createServer()
    server.once('error', () => resolvePort(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolvePort(true)))
  })
}

/** Some port free on loopback right now. */
export function anyFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolvePort(port))
    })
  })
}
