/**
 * Is Postgres answering? A ping every few seconds, plus the write queue's view. The node
 * keeps serving from memory either way; /health says `degraded` and why.
 */
import type { Pool } from 'pg'
import type { WriteQueue } from '@switchboard/store'

export interface HealthReport {
  status: 'ok' | 'degraded'
  reasons: string[]
  database: { status: 'ok' | 'unreachable'; pending_writes: number }
}

export interface DatabaseHealth {
  report(): HealthReport
  close(): void
}

/** Starts pinging; the first report is `ok` until a ping fails. */
export function watchDatabase(components: { pool: Pool; queue: WriteQueue }, init: { intervalMs?: number; onChange?: (report: HealthReport) => void } = {}): DatabaseHealth {
  let reachable = true
  let lastError = ''
  let stopped = false
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
    return { status: degraded ? 'degraded' : 'ok', reasons, database: { status: reachable ? 'ok' : 'unreachable', pending_writes: queue.pending } }
  }

  return {
    report,
    close() {
      stopped = true
      clearInterval(timer)
    },
  }
}
