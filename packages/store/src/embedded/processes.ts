/**
 * What the operating system says about a process, read so that a dying server is not
 * mistaken for a running one. `kill(pid, 0)` succeeds on a zombie, and so does `pg_ctl
 * status`: a postmaster SIGKILLed under a PID 1 that reaps late (many containers) looks
 * alive until it is reaped. On Linux `/proc/<pid>/stat` tells a zombie apart; elsewhere
 * we fall back to the signal check.
 */
import { readFileSync } from 'node:fs'
import { readdir, readlink } from 'node:fs/promises'

/** True when `pid` is a process that still runs: it exists and is neither a zombie nor dead. */
export function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EPERM') return false
  }
  const state = procStat(pid)?.state
  return state === undefined || (state !== 'Z' && state !== 'X' && state !== 'x')
}

/**
 * When the process started (clock ticks since boot, `/proc/<pid>/stat` field 22), to tell a
 * process from a later one that got the same pid; undefined without /proc.
 */
export function processStartTime(pid: number): string | undefined {
  return procStat(pid)?.startTime
}

/** Running processes whose working directory is `directory` (a postmaster and its backends chdir to the data dir). */
export async function processesIn(directory: string): Promise<number[]> {
  const found: number[] = []
  await Promise.all(
    (await readdir('/proc').catch(() => [])).map(async (entry) => {
      const pid = Number(entry)
      if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return
      const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => undefined)
      if (cwd === directory && isRunning(pid)) found.push(pid)
    }),
  )
  return found.sort((a, b) => a - b)
}

function procStat(pid: number): { state: string; startTime: string } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const [state, startTime] = [fields[0], fields[19]]
  if (state === undefined || startTime === undefined) return undefined
  return { state, startTime }
}
