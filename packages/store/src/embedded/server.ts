/**
 * Zero-setup PostgreSQL: one real server per data directory, shared by every
 * local node.
 *
 * Lifecycle: the first node to find no server starts one (initialising the
 * data directory when it is empty) under the lock file; later nodes see the
 * lock, wait for `running`, and connect. The server runs detached (pg_ctl
 * daemonises it in its own session), so it outlives the node that started it:
 * killing any node loses nothing. It is stopped only on purpose, by
 * `release()` on the handle that started it (a fleet launcher, a test run) or
 * by `stopEmbeddedDatabase()`.
 */
import { randomBytes } from 'node:crypto'
import { chown, mkdir, readFile, readdir, rename, rm, stat, writeFile, appendFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createServer } from 'node:net'
import { describeFailure, ensureTraversable, locateBinaries, postgresIdentity, runProgram, type PostgresIdentity } from './binaries.ts'
import { breakLock, isAlive, readLock, removeLock, rewriteLock, tryCreateLock } from './lock.ts'

/** Default port of the embedded server: off 5432 so it never meets a system Postgres. */
export const defaultEmbeddedPort = 54329

/** Options of `ensureDatabase`. */
export interface EnsureDatabaseInit {
  /** Use this server instead of the embedded one. */
  databaseUrl?: string
  /** Data directory of the embedded server; default `<cwd>/.switchboard/postgres`. */
  dataDir?: string
  /** Port the embedded server listens on (127.0.0.1 only); default 54329. */
  port?: number
  /** How long to wait for another node's server to come up; default 60 s. */
  startTimeoutMs?: number
  log?: (line: string) => void
}

/** A database to connect to. */
export interface DatabaseHandle {
  url: string
  /** True when this is the embedded server. */
  embedded: boolean
  /** True when this call started the embedded server (it was not running). */
  started: boolean
  /** Stops the embedded server if this call started it; otherwise does nothing. */
  release(): Promise<void>
}

const databaseUser = 'postgres'

/** Returns a database URL, starting (or joining) the embedded server when none is given. */
export async function ensureDatabase(init: EnsureDatabaseInit): Promise<DatabaseHandle> {
  if (init.databaseUrl) {
    return { url: init.databaseUrl, embedded: false, started: false, release: async () => {} }
  }
  const paths = embeddedPaths(init.dataDir)
  const port = init.port ?? defaultEmbeddedPort
  const log = init.log ?? (() => {})
  const deadline = Date.now() + (init.startTimeoutMs ?? 60_000)
  await mkdir(dirname(paths.dataDir), { recursive: true })

  for (;;) {
    const lock = await readLock(paths.lock)
    if (!lock) {
      if (await tryCreateLock(paths.lock, { pid: process.pid, port, phase: 'starting' })) {
        return startAsOwner(paths, port, log)
      }
      continue
    }
    const state = lock.state
    if (state && (!isAlive(state.pid) || (state.phase === 'running' && !(await mayBePostgres(state.pid))))) {
      log(`embedded postgres: breaking stale lock of pid ${state.pid}`)
      await breakLock(paths.lock, lock.text)
      continue
    }
    if (!state && (await ageMs(paths.lock)) > 5_000) {
      // A node died between creating the lock and writing it.
      await breakLock(paths.lock, lock.text)
      continue
    }
    if (state?.phase === 'running') {
      if (state.port !== port) log(`embedded postgres: already running on port ${state.port}; using it`)
      return joined(paths, state.port)
    }
    if (Date.now() > deadline) {
      throw new Error(`embedded postgres: gave up waiting for pid ${state?.pid ?? '?'} to start the server (lock ${paths.lock})`)
    }
    await sleep(50)
  }
}

/** Stops the embedded server of `dataDir` if it runs, whoever started it. */
export async function stopEmbeddedDatabase(init: { dataDir?: string; log?: (line: string) => void } = {}): Promise<void> {
  const paths = embeddedPaths(init.dataDir)
  const binaries = await locateBinaries()
  const identity = await postgresIdentity()
  if (await isServerRunning(paths.dataDir, binaries.pgControl, identity)) {
    await runProgram(binaries.pgControl, ['stop', '-D', paths.dataDir, '-m', 'fast', '-w', '-t', '60'], {
      identity,
      cwd: paths.dataDir,
    }).catch((error: unknown) => {
      throw new Error(`embedded postgres: pg_ctl stop failed: ${describeFailure(error)}`)
    })
    init.log?.(`embedded postgres: stopped (${paths.dataDir})`)
  }
  await removeLock(paths.lock)
}

/** Where the embedded server keeps its files. */
export function embeddedPaths(dataDir?: string): { dataDir: string; lock: string; password: string } {
  const resolved = resolve(dataDir ?? join(process.cwd(), '.switchboard', 'postgres'))
  return { dataDir: resolved, lock: `${resolved}.lock`, password: `${resolved}.password` }
}

type Paths = ReturnType<typeof embeddedPaths>

async function startAsOwner(paths: Paths, port: number, log: (line: string) => void): Promise<DatabaseHandle> {
  try {
    const binaries = await locateBinaries()
    const identity = await postgresIdentity()
    await mkdir(dirname(paths.dataDir), { recursive: true })
    const opened = await ensureTraversable([dirname(binaries.initdb), dirname(paths.dataDir)], identity)
    if (opened.length > 0) log(`embedded postgres: let the postgres user pass through ${opened.join(', ')} (o+x) to reach its files`)
    let serverPid = await runningPostmasterPid(paths.dataDir)
    let actualPort = port
    let started = false
    if (serverPid !== undefined && (await isServerRunning(paths.dataDir, binaries.pgControl, identity))) {
      // A server outlived its lock (its starter died before recording it): adopt it.
      actualPort = (await postmasterPort(paths.dataDir)) ?? port
      log(`embedded postgres: adopting running server pid ${serverPid} on port ${actualPort}`)
    } else {
      if (!(await isInitialised(paths.dataDir))) {
        const began = performance.now()
        await initialise(paths, binaries.initdb, identity)
        log(`embedded postgres: initialised ${paths.dataDir} in ${Math.round(performance.now() - began)} ms`)
      }
      const began = performance.now()
      // Another checkout's embedded server may hold the default port: take a free one then (the lock records it).
      if (!(await portFree(port))) {
        actualPort = await anyFreePort()
        log(`embedded postgres: port ${port} is taken (another data directory's server?); using ${actualPort}`)
      }
      await runProgram(
        binaries.pgControl,
        ['start', '-D', paths.dataDir, '-l', join(paths.dataDir, 'server.log'), '-w', '-t', '60', '-o', `-p ${actualPort}`],
        { identity, cwd: paths.dataDir },
      ).catch((error: unknown) => {
        throw new Error(`embedded postgres: could not start on port ${actualPort}: ${describeFailure(error)} (see ${join(paths.dataDir, 'server.log')})`)
      })
      serverPid = await runningPostmasterPid(paths.dataDir)
      if (serverPid === undefined) throw new Error('embedded postgres: started but wrote no postmaster.pid')
      started = true
      log(`embedded postgres: started on 127.0.0.1:${actualPort} in ${Math.round(performance.now() - began)} ms`)
    }
    await rewriteLock(paths.lock, { pid: serverPid, port: actualPort, phase: 'running' })
    const handle = await joined(paths, actualPort)
    if (!started) return handle
    return {
      ...handle,
      started: true,
      release: () => stopEmbeddedDatabase({ dataDir: paths.dataDir, log }),
    }
  } catch (error) {
    await removeLock(paths.lock, process.pid)
    throw error
  }
}

async function joined(paths: Paths, port: number): Promise<DatabaseHandle> {
  const password = (await readFile(paths.password, 'utf8')).trim()
  const url = `postgres://${databaseUser}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`
  return { url, embedded: true, started: false, release: async () => {} }
}

/** initdb into a scratch directory, then rename: a crash mid-init never leaves a half-made data dir. */
async function initialise(paths: Paths, initdb: string, identity: PostgresIdentity | undefined): Promise<void> {
  const scratch = `${paths.dataDir}.init-${process.pid}-${randomBytes(4).toString('hex')}`
  const existing = await readdir(paths.dataDir).catch(() => [])
  if (existing.length > 0) {
    throw new Error(`embedded postgres: ${paths.dataDir} is not empty and holds no PostgreSQL data; refusing to initialise over it`)
  }
  await rm(paths.dataDir, { recursive: true, force: true })
  await mkdir(scratch, { mode: 0o700 })
  const password = randomBytes(18).toString('base64url')
  // The password file doubles as the pwfile for initdb, so postgres must read it.
  await writeFile(paths.password, `${password}\n`, { mode: 0o600 })
  if (identity) {
    await chown(scratch, identity.uid, identity.gid)
    await chown(paths.password, identity.uid, identity.gid)
  }
  try {
    await runProgram(
      initdb,
      [
        `--pgdata=${scratch}`,
        `--username=${databaseUser}`,
        `--pwfile=${paths.password}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
      ],
      { identity, cwd: dirname(scratch) },
    )
    // Loopback TCP only: no unix socket to collide with a system Postgres.
    await appendFile(
      join(scratch, 'postgresql.conf'),
      "\n# switchboard\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 200\n",
    )
    await rename(scratch, paths.dataDir)
  } catch (error) {
    await rm(scratch, { recursive: true, force: true })
    throw new Error(`embedded postgres: initdb failed: ${describeFailure(error)}`)
  }
}

async function isInitialised(dataDir: string): Promise<boolean> {
  try {
    await stat(join(dataDir, 'PG_VERSION'))
    return true
  } catch {
    return false
  }
}

async function isServerRunning(dataDir: string, pgControl: string, identity: PostgresIdentity | undefined): Promise<boolean> {
  if (!(await isInitialised(dataDir))) return false
  try {
    await runProgram(pgControl, ['status', '-D', dataDir], { identity, cwd: dataDir })
    return true
  } catch {
    return false
  }
}

async function postmasterLines(dataDir: string): Promise<string[] | undefined> {
  try {
    return (await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')
  } catch {
    return undefined
  }
}

async function runningPostmasterPid(dataDir: string): Promise<number | undefined> {
  const pid = Number((await postmasterLines(dataDir))?.[0])
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined
}

async function postmasterPort(dataDir: string): Promise<number | undefined> {
  // Line 4 of postmaster.pid is the port (PostgreSQL's documented layout).
  const port = Number((await postmasterLines(dataDir))?.[3])
  return Number.isInteger(port) && port > 0 ? port : undefined
}

/** False when the pid surely is not a postgres (reused after a reboot); true when unsure (no /proc). */
async function mayBePostgres(pid: number): Promise<boolean> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).includes('postgres')
  } catch {
    return true
  }
}

async function ageMs(path: string): Promise<number> {
  try {
    return Date.now() - (await stat(path)).mtimeMs
  } catch {
    return 0
  }
}

/** True when nothing listens on 127.0.0.1:port. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const server = createServer()
    server.once('error', () => resolvePort(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolvePort(true)))
  })
}

/** Some port free on loopback right now. */
function anyFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolvePort(port))
    })
  })
}
