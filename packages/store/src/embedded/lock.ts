/**
 * The lock file that keeps two PostgreSQL servers off one data directory.
 *
 * It holds `{ pid, port, phase }`: while a node initialises and starts the
 * server, `pid` is that node and `phase` is `starting`; once the server is up,
 * `pid` is the postmaster's and `phase` is `running`; while its last user stops
 * it, `phase` is `stopping` and `owner` is that user's pid. A lock whose pid (or
 * owner) no longer runs is stale (a node died mid-start or mid-stop, or the
 * server crashed) and is broken.
 */
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'

/** Contents of the lock file. */
export interface LockState {
  pid: number
  port: number
  phase: 'starting' | 'running' | 'stopping'
  /** While `stopping`: the process stopping the server. */
  owner?: number
}

/** Reads the lock: its parsed state and the exact text (to compare before breaking it); `undefined` when there is none. An unparsable lock is still being written. */
export async function readLock(path: string) {
  const text = await readFile(path, 'utf8').catch(unless('ENOENT'))
  return text === undefined ? undefined : { state: parseLock(text), text }
}

/** Creates the lock exclusively; false when another process holds it. */
export async function tryCreateLock(path: string, state: LockState): Promise<boolean> {
  return (await writeFile(path, JSON.stringify(state), { flag: 'wx', mode: 0o644 }).then(() => true, unless('EEXIST'))) ?? false
}

/** Replaces the lock's contents atomically (readers never see a half-written file). */
export async function rewriteLock(path: string, state: LockState): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`
  await writeFile(temporary, JSON.stringify(state), { flag: 'wx', mode: 0o644 })
  await rename(temporary, path)
}

/**
 * Removes the lock only if it still reads `seenText`. Two nodes may both judge
 * a lock stale; the rename makes the removal atomic, and if what we moved
 * aside turns out to be a fresh lock another node just created, we put it back.
 */
export async function breakLock(path: string, seenText: string): Promise<void> {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`
  if (!(await rename(path, aside).then(() => true, unless('ENOENT')))) return
  const movedText = await readFile(aside, 'utf8')
  if (movedText !== seenText) {
    await link(aside, path).catch(() => {
      // A newer lock already took its place; that one now rules.
    })
  }
  await unlink(aside)
}

/** Removes the lock when it names `pid` (or any pid when omitted). */
export async function removeLock(path: string, pid?: number): Promise<void> {
  const current = await readLock(path)
  if (!current || (pid !== undefined && current.state?.pid !== pid)) return
  await breakLock(path, current.text)
}

function parseLock(text: string): LockState | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockState>
    if (typeof value.pid !== 'number' || typeof value.port !== 'number') return undefined
    if (value.phase !== 'starting' && value.phase !== 'running' && value.phase !== 'stopping') return undefined
    return { pid: value.pid, port: value.port, phase: value.phase, ...(typeof value.owner === 'number' ? { owner: value.owner } : {}) }
  } catch {
    return undefined
  }
}

/** A rejection handler: undefined for a Node system error with this `code`, any other error rethrown. */
function unless(code: string): (error: unknown) => undefined {
  return (error) => {
    if ((error as { code?: unknown } | null)?.code === code) return undefined
    throw error
  }
}
