/**
 * Zero-setup PostgreSQL: one real server per data directory, shared by every
 * local node.
 *
 * Lifecycle: the first node to find no server starts one (initialising the
 * data directory when it is empty) under the lock file; later nodes see the
 * lock, wait for `running`, check the server answers, and register as users.
 * The server runs detached (pg_ctl daemonises it in its own session), so it
 * outlives the node that started it: killing any node loses nothing. It is
 * stopped when its last live user calls `release()` (the lock says `stopping`
 * meanwhile, and a node arriving then waits and starts a fresh one), or by
 * `stopEmbeddedDatabase()`. A server that is starting, stopping or dead (a
 * zombie included) is never taken for a running one: a node waits for it to
 * go, and for its last backends to exit, before starting another.
 */
import { randomBytes } from 'node:crypto'
import { chown, mkdir, readFile, readdir, rename, rm, stat, writeFile, appendFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describeFailure, embeddedPackage, ensureTraversable, locateBinaries, postgresIdentity, runProgram, type PostgresIdentity } from './binaries.ts'
import { breakLock, readLock, removeLock, rewriteLock, tryCreateLock, type LockState } from './lock.ts'
import { answers, anyFreePort, clearStalePidFile, livePostmaster, mayBePostgres, portFree } from './postmaster.ts'
import { isRunning, processesIn } from './processes.ts'
import { liveUsers, registerUser, unregisterUser } from './users.ts'

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
  /** How long to wait for another node's server to come up (or an old one to go); default 60 s. */
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
  /**
   * Done with the embedded server: stops it when no other live process uses it; otherwise
   * (and for a server given by URL) does nothing. Idempotent.
   */
  release(): Promise<void>
}

const databaseUser = 'postgres'

/** Returns a database URL, starting (or joining) the embedded server when none is given. */
export async function ensureDatabase(init: EnsureDatabaseInit): Promise<DatabaseHandle> {
  if (init.databaseUrl) {
    return { url: init.databaseUrl, embedded: false, started: false, release: async () => {} }
  }
  // Before any file is made: an install without the package (the Docker image) says what to set.
  embeddedPackage()
  const paths = embeddedPaths(init.dataDir)
  const port = init.port ?? defaultEmbeddedPort
  const log = init.log ?? (() => {})
  const deadline = Date.now() + (init.startTimeoutMs ?? 60_000)
  await mkdir(dirname(paths.dataDir), { recursive: true })
  let waitingSaid = ''

  for (;;) {
    const lock = await readLock(paths.lock)
    if (!lock) {
      if (await tryCreateLock(paths.lock, { pid: process.pid, port, phase: 'starting' })) {
        return startAsOwner(paths, port, log, deadline)
      }
      continue
    }
    const state = lock.state
    if (!state) {
      // A node died between creating the lock and writing it.
      if ((await ageMs(paths.lock)) > 5_000) await breakLock(paths.lock, lock.text)
      else await sleep(50)
      continue
    }
    // Stale: the starter died mid-start, the server died, or the stopper died mid-stop.
    if (!isRunning(holder(state)) || (state.phase === 'running' && !(await mayBePostgres(state.pid)))) {
      log(`embedded postgres: breaking stale lock of pid ${holder(state)} (${state.phase})`)
      await breakLock(paths.lock, lock.text)
      continue
    }
    if (state.phase === 'running') {
      // Register first, then check the lock still says running: a last user stopping the
      // server writes `stopping` first, then counts users, so one of us sees the other.
      const user = await registerUser(paths.users)
      const url = await serverUrl(paths, state.port)
      const again = await readLock(paths.lock)
      if (again?.text === lock.text && (await answers(url))) {
        if (state.port !== port) log(`embedded postgres: already running on port ${state.port}; using it`)
        return handle(paths, url, user, false, log)
      }
      await unregisterUser(user)
    }
    if (Date.now() > deadline) {
      throw new Error(`embedded postgres: gave up waiting for the server of ${paths.dataDir} (lock: ${lock.text}; pid ${state.pid} ${state.phase})`)
    }
    const waiting = `${state.phase} ${state.pid}`
    if (waiting !== waitingSaid && state.phase !== 'starting') log(`embedded postgres: waiting for the server (pid ${state.pid}) that is ${state.phase === 'running' ? 'not answering yet' : state.phase}`)
    waitingSaid = waiting
    await sleep(100)
  }
}

/** Stops the embedded server of `dataDir` if it runs, whoever started it and whoever uses it. */
export async function stopEmbeddedDatabase(init: { dataDir?: string; log?: (line: string) => void } = {}): Promise<void> {
  const paths = embeddedPaths(init.dataDir)
  await stopServer(paths, init.log ?? (() => {}))
  await removeLock(paths.lock)
  await rm(paths.users, { recursive: true, force: true })
}

/** Where the embedded server keeps its files. */
export function embeddedPaths(dataDir?: string): { dataDir: string; lock: string; password: string; users: string } {
  const resolved = resolve(dataDir ?? join(process.cwd(), '.switchboard', 'postgres'))
  return { dataDir: resolved, lock: `${resolved}.lock`, password: `${resolved}.password`, users: `${resolved}.users` }
}

type Paths = ReturnType<typeof embeddedPaths>

/** The process a lock stands for: the node stopping the server while `stopping`, else its pid. */
function holder(state: LockState): number {
  return state.phase === 'stopping' ? (state.owner ?? state.pid) : state.pid
}

async function stopServer(paths: Paths, log: (line: string) => void): Promise<void> {
  const postmaster = await livePostmaster(paths.dataDir)
  if (postmaster === undefined) {
    await clearStalePidFile(paths.dataDir)
    return
  }
  const binaries = await locateBinaries()
  const identity = await postgresIdentity()
  await runProgram(binaries.pgControl, ['stop', '-D', paths.dataDir, '-m', 'fast', '-w', '-t', '60'], { identity, cwd: paths.dataDir }).catch(async (error: unknown) => {
    // Gone meanwhile (another stopper, or it died): nothing left to stop.
    if ((await livePostmaster(paths.dataDir)) === undefined) return
    throw new Error(`embedded postgres: pg_ctl stop failed: ${describeFailure(error)}`)
  })
  log(`embedded postgres: stopped (${paths.dataDir})`)
}

/** The handle of a registered user; its release stops the server when it was the last live user. */
function handle(paths: Paths, url: string, user: string, started: boolean, log: (line: string) => void): DatabaseHandle {
  let released: Promise<void> | undefined
  return { url, embedded: true, started, release: () => (released ??= releaseUser(paths, user, log)) }
}

async function releaseUser(paths: Paths, user: string, log: (line: string) => void): Promise<void> {
  await unregisterUser(user)
  if ((await liveUsers(paths.users)).length > 0) return
  const state = (await readLock(paths.lock))?.state
  if (state?.phase !== 'running') return
  await rewriteLock(paths.lock, { ...state, phase: 'stopping', owner: process.pid })
  // Someone registered between our count and the lock change: they keep it running.
  if ((await liveUsers(paths.users)).length > 0) {
    await rewriteLock(paths.lock, state)
    return
  }
  try {
    await stopServer(paths, log)
    log('embedded postgres: stopped, its last user is gone')
  } finally {
    await removeLock(paths.lock)
  }
}

async function startAsOwner(paths: Paths, port: number, log: (line: string) => void, deadline: number): Promise<DatabaseHandle> {
  let user: string | undefined
  try {
    const binaries = await locateBinaries()
    const identity = await postgresIdentity()
    const opened = await ensureTraversable([dirname(binaries.initdb), dirname(paths.dataDir)], identity)
    if (opened.length > 0) log(`embedded postgres: let the postgres user pass through ${opened.join(', ')} (o+x) to reach its files`)
    // Registered before the lock says running, so no last user can stop the server under us.
    user = await registerUser(paths.users)
    let actualPort = port
    let started = false
    let serverPid: number | undefined
    let waited = false
    /** Waits a moment for an old server to go (saying so the first time); gives up past the deadline. */
    const wait = async (what: string): Promise<void> => {
      if (Date.now() > deadline) throw new Error(`embedded postgres: gave up waiting for ${what}`)
      if (!waited) log(`embedded postgres: waiting for ${what}`)
      waited = true
      await sleep(100)
    }
    for (;;) {
      const postmaster = await livePostmaster(paths.dataDir)
      if (postmaster) {
        if (postmaster.status === 'ready' && postmaster.port !== undefined && (await answers(await serverUrl(paths, postmaster.port)))) {
          // A server outlived its lock (its starter died before recording it): adopt it.
          actualPort = postmaster.port
          serverPid = postmaster.pid
          log(`embedded postgres: adopting running server pid ${serverPid} on port ${actualPort}`)
          break
        }
        await wait(`the old server pid ${postmaster.pid} (${postmaster.status}) to go`)
        continue
      }
      // The postmaster is gone; its backends may still be exiting (they hold its shared memory).
      const lingering = await processesIn(paths.dataDir)
      if (lingering.length > 0) {
        await wait(`the old server's processes ${lingering.join(', ')} to exit`)
        continue
      }
      if (await clearStalePidFile(paths.dataDir)) log('embedded postgres: removed the postmaster.pid of a server that is gone')
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
      serverPid = (await livePostmaster(paths.dataDir))?.pid
      if (serverPid === undefined) throw new Error('embedded postgres: started but wrote no postmaster.pid')
      started = true
      log(`embedded postgres: started on 127.0.0.1:${actualPort} in ${Math.round(performance.now() - began)} ms`)
      break
    }
    await rewriteLock(paths.lock, { pid: serverPid, port: actualPort, phase: 'running' })
    return handle(paths, await serverUrl(paths, actualPort), user, started, log)
  } catch (error) {
    if (user !== undefined) await unregisterUser(user)
    await removeLock(paths.lock, process.pid)
    throw error
  }
}

async function serverUrl(paths: Paths, port: number): Promise<string> {
  const password = (await readFile(paths.password, 'utf8')).trim()
  return `postgres://${databaseUser}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`
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
    const options = [`--pgdata=${scratch}`, `--username=${databaseUser}`, `--pwfile=${paths.password}`, '--auth=scram-sha-256', '--encoding=UTF8', '--no-locale']
    await runProgram(initdb, options, { identity, cwd: dirname(scratch) })
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

function isInitialised(dataDir: string): Promise<boolean> {
  return stat(join(dataDir, 'PG_VERSION')).then(() => true, () => false)
}

function ageMs(path: string): Promise<number> {
  return stat(path).then((info) => Date.now() - info.mtimeMs, () => 0)
}
