/**
 * Is Postgres answering? A ping every few seconds, plus the write queue's view. The node
 * keeps serving from memory either way; /health says `degraded` and why.
 */
import type { DatabasePool as Pool } from '@switchboard/store'
import type { WriteQueue } from '@switchboard/store'

export interface HealthReport {
  /** `draining`: shutting down, finishing in-flight requests; take no new traffic. */
  status: 'ok' | 'degraded' | 'draining'
  reasons: string[]
  database: { status: 'ok' | 'unreachable'; pending_writes: number }
}

export interface DatabaseHealth {
  report(): HealthReport
  /** From now on the node reports `draining`. */
  setDraining(): void
  close(): void
}

/** Starts pinging; the first report is `ok` until a ping fails. */
export function watchDatabase(components: { pool: Pool; queue: WriteQueue }, init: { intervalMs?: number; onChange?: (report: HealthReport) => void } = {}): DatabaseHealth {
  let reachable = true
  let lastError = ''
  let stopped = false
  let draining = false
  const ping = async () => {
    try {
      await components.pool.query('SELECT 1')
      if (!reachable) {
        reachable = true
        init.onChange?.(report())
      }
    } catch (error) {
      lastError = (error as Error).message || String(error)
      if (reachable) {
        reachable = false
        init.onChange?.(report())
      }
    }
  }
  let running = false
  const timer = setInterval(() => {
    if (running || stopped) return
    running = true
    void ping().finally(() => (running = false))
  }, init.intervalMs ?? 2_000)
  timer.unref()

  const report = (): HealthReport => {
    const queue = components.queue.status()
    const reasons: string[] = []
    if (!reachable) reasons.push(`Postgres is not answering (${lastError}); serving from memory`)
    if (!queue.healthy && queue.reason) reasons.push(queue.reason)
    if (queue.pending > 0) reasons.push(`${queue.pending} write${queue.pending === 1 ? '' : 's'} waiting for Postgres`)
    const degraded = !reachable || !queue.healthy
    if (draining) reasons.unshift('shutting down: finishing in-flight requests')
    return { status: draining ? 'draining' : degraded ? 'degraded' : 'ok', reasons, database: { status: reachable ? 'ok' : 'unreachable', pending_writes: queue.pending } }
  }

  return {
    report,
    setDraining() {
      draining = true
    },
    close() {
      stopped = true
      clearInterval(timer)
    },
  }
}
