/**
 * Degraded, not down: writes that must reach Postgres go through this queue.
 * When Postgres is away, a write is retried (with capped backoff) until it
 * lands, in order, while the gateway keeps serving from memory; the queue's
 * status feeds /health.
 */
import { setTimeout as sleep } from 'node:timers/promises'

/** Options of the write queue. */
export interface WriteQueueInit {
  /** First retry delay; doubles per failure up to `maxRetryDelayMs`. Default 100 ms. */
  retryDelayMs?: number
  /** Default 5 s. */
  maxRetryDelayMs?: number
  log?: (line: string) => void
}

/** What /health reports about persistence. */
export interface WriteQueueStatus {
  /** False while the oldest pending write fails to reach the database. */
  healthy: boolean
  /** Why it is unhealthy, for people. */
  reason?: string
  /** Writes not yet landed, including the one in flight. */
  pending: number
}

/** An ordered, retrying queue of database writes. */
export type WriteQueue = ReturnType<typeof createWriteQueue>

interface Job {
  description: string
  write: () => Promise<unknown>
  resolve(value: unknown): void
  reject(error: unknown): void
}

/** Creates a write queue. Writes run one at a time, in the order queued. */
export function createWriteQueue(init: WriteQueueInit = {}) {
  const firstDelay = init.retryDelayMs ?? 100
  const maxDelay = init.maxRetryDelayMs ?? 5_000
  const log = init.log ?? (() => {})
  const jobs: Job[] = []
  const waiters: (() => void)[] = []
  let reason: string | undefined
  let running = false
  let closed = false
  const abort = new AbortController()

  async function run(): Promise<void> {
    running = true
    while (jobs.length > 0 && !closed) {
      const job = jobs[0] as Job
      let delay = firstDelay
      for (;;) {
        try {
          job.resolve(await job.write())
          if (reason !== undefined) log(`database writes landing again (${job.description})`)
          reason = undefined
          break
        } catch (error) {
          if (!isUnreachable(error)) {
            job.reject(error)
            break
          }
          if (reason === undefined) log(`database unreachable; retrying "${job.description}" until it lands: ${describe(error)}`)
          reason = `database unreachable: ${describe(error)}`
          try {
            await sleep(delay, undefined, { signal: abort.signal })
          } catch {
            job.reject(closedError()) // aborted: the queue was closed
            break
          }
          delay = Math.min(delay * 2, maxDelay)
        }
      }
      jobs.shift()
    }
    running = false
    for (const job of jobs.splice(0)) job.reject(closedError())
    for (const waiter of waiters.splice(0)) waiter()
  }

  return {
    /**
     * Queues a write; resolves when it has landed. Rejects only when the write
     * fails for a reason retrying cannot fix (e.g. a constraint), or on `close`.
     * Fire-and-forget callers need not catch: the rejection is already handled.
     */
    enqueue<Result>(description: string, write: () => Promise<Result>): Promise<Result> {
      const landed = new Promise<Result>((resolve, reject) => {
        if (closed) return reject(new Error('write queue is closed'))
        jobs.push({ description, write, resolve: resolve as (value: unknown) => void, reject })
      })
      landed.catch(() => {}) // handled for fire-and-forget callers; awaiting callers still see it
      if (!running && !closed) void run()
      return landed
    },
    status(): WriteQueueStatus {
      return { healthy: reason === undefined, ...(reason === undefined ? {} : { reason }), pending: jobs.length }
    },
    /** Resolves once every write queued so far has settled. */
    drained(): Promise<void> {
      if (!running) return Promise.resolve()
      return new Promise((resolve) => waiters.push(resolve))
    },
    /** Stops retrying; pending writes reject. */
    close(): void {
      closed = true
      abort.abort()
      if (!running) for (const job of jobs.splice(0)) job.reject(closedError())
    },
  }
}

/**
 * True for failures that mean "the database is not there right now": socket
 * errors (errno codes), the SQLSTATEs of a server that is down, starting or
 * shutting down, and pg's own connection failures (plain `Error`s with no
 * code, e.g. a connection terminated mid-query). Anything else is a real
 * refusal or a bug, which retrying would only repeat forever.
 */
export function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string') {
    // No SQLSTATE class starts with E, so this only matches errno codes (ECONNREFUSED, EPIPE, ...).
    if (/^E[A-Z]+$/.test(code)) return true
    if (/^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || /^57P0[1-3]$/.test(code) || code === '53300'
    return false
  }
  return error instanceof Error && error.constructor === Error
}

function closedError(): Error {
  return new Error('write queue closed before the write landed')
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error)
}
