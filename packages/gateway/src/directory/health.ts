/** What /health says: is the node ready (boot/readiness.ts), and is Postgres answering? A ready node serves from memory either way. */
import type { DatabasePool as Pool, WriteQueue } from '@switchboard/store'
import type { ReadinessState } from '../boot/readiness.ts'

export interface HealthReport {
  /** `starting` (not ready yet) and `draining` (shutting down) are 503; `ok` and `degraded` serve (200). */
  status: 'starting' | 'ok' | 'degraded' | 'draining'
  reasons: string[]
  /** `unknown` until the first ping has answered or failed. */
  database: { status: 'ok' | 'unreachable' | 'unknown'; pending_writes: number }
  /** Where the gateway keys came from (`postgres`, `peer`, `config`); null while not loaded. */
  gateway_keys: { from: 'postgres' | 'peer' | 'config' | null }
}

/** The HTTP status of a report: 503 for a node that should not be sent traffic. */
export function healthStatusCode(report: HealthReport): 200 | 503 {
  return report.status === 'starting' || report.status === 'draining' ? 503 : 200
}

/** The report of a node still wiring itself up (http/early.ts), before Postgres was asked. */
export function startingReport(readiness: ReadinessState): HealthReport {
  return { status: 'starting', reasons: readiness.get().starting, database: { status: 'unknown', pending_writes: 0 }, gateway_keys: { from: readiness.current().gatewayKeys } }
}

export interface DatabaseHealth {
  report(): HealthReport
  setDraining(): void
  close(): void
}

/** Starts pinging (the first ping at once); the database is `unknown` until it answers or fails. */
export function watchDatabase(components: { pool: Pool; queue: WriteQueue; readiness: ReadinessState }, init: { onChange?: (report: HealthReport) => void } = {}): DatabaseHealth {
  let reachable: boolean | null = null
  let lastError = ''
  let stopped = false
  let draining = false
  const ping = async () => {
    try {
      await components.pool.query('SELECT 1')
      const was = reachable
      reachable = true
      // The first answer is no change.
      if (was === false) init.onChange?.(report())
    } catch (error) {
      lastError = (error as Error).message || String(error)
      if (reachable !== false) {
        reachable = false
        init.onChange?.(report())
      }
    }
  }
  let running = false
  const round = () => {
    if (running || stopped) return
    running = true
    void ping().finally(() => (running = false))
  }
  const timer = setInterval(round, 2_000)
  timer.unref()
  round()

  const report = (): HealthReport => {
    const queue = components.queue.status()
    const readiness = components.readiness.get()
    const reasons: string[] = [...readiness.starting]
    if (reachable === false) reasons.push(`Postgres is not answering (${lastError}); ${readiness.ready ? 'serving from memory' : 'not serving until the gateway keys are known'}`)
    if (!queue.healthy && queue.reason) reasons.push(queue.reason)
    if (queue.pending > 0) reasons.push(`${queue.pending} write${queue.pending === 1 ? '' : 's'} waiting for Postgres`)
    reasons.push(...readiness.degraded)
    const degraded = reachable === false || !queue.healthy || readiness.degraded.length > 0
    if (draining) reasons.unshift('shutting down: finishing in-flight requests')
    const status = draining ? 'draining' : !readiness.ready ? 'starting' : degraded ? 'degraded' : 'ok'
    return {
      status,
      reasons,
      database: { status: reachable === null ? 'unknown' : reachable ? 'ok' : 'unreachable', pending_writes: queue.pending },
      gateway_keys: { from: components.readiness.current().gatewayKeys },
    }
  }

  return {
    report,
    setDraining: () => (draining = true),
    close() {
      stopped = true
      clearInterval(timer)
    },
  }
}
