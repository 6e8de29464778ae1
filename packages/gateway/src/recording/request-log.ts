/**
 * Wires the request log of one node: the history package's writer listens to the request
 * recorder, its counters feed /metrics, and the API reads the fleet's log from Postgres.
 */
import { createRequestLog, readLog, searchLogs, type RequestLog, type RequestLogComponents } from '@switchboard/history'
import { scrapedCounter, scrapedGauge, type Metrics } from '../observability/metrics.ts'
import type { LogsApiComponents } from '../admin/logs-api.ts'
import type { RequestRecorder } from './request-record.ts'
import type { GatewayConfig } from '../config/load.ts'

export interface NodeRequestLogComponents extends Pick<RequestLogComponents, 'pool' | 'now' | 'isLeader' | 'log'> {
  recorder: RequestRecorder
  metrics: Metrics
  /** The configured keys' names by id (the facets name every key they count, not only the page's). */
  keyNames: () => Iterable<{ id: string; name: string }>
}

/** `request_log` of config.json: on or off, the days kept, the rows buffered at most. */
export type NodeRequestLogInit = Pick<GatewayConfig['requestLog'], 'enabled' | 'retentionDays' | 'maxBufferedRows'>

/** Starts the request log (when enabled); returns the logs API's components and the log's close. */
export async function startRequestLog(components: NodeRequestLogComponents, init: NodeRequestLogInit): Promise<{ api: LogsApiComponents; close(): Promise<void> }> {
  const { pool, metrics, now, isLeader, log } = components
  let requestLog: RequestLog | undefined
  let off = () => {}
  if (init.enabled) {
    requestLog = createRequestLog(
      {
        pool, now, isLeader, log,
        onWritten: (rows, seconds) => {
          metrics.requestLogWritten.inc(rows)
          metrics.requestLogWriteSeconds.observe(seconds)
        },
      },
      { retentionDays: init.retentionDays, capacity: init.maxBufferedRows },
    )
    // Not awaited: a node's start never waits on the log's upkeep (a row written before its day's partition exists is refused and counted).
    void requestLog.start()
    off = components.recorder.on(requestLog.listener)
  }
  // Rows waiting and dropped (by reason) as the writer counts them, read when /metrics is scraped.
  scrapedGauge(metrics.registry, 'switchboard_request_log_rows_buffered', 'Request log rows waiting to be written', [], (gauge) => {
    if (requestLog !== undefined) gauge.set(requestLog.stats().buffered)
  })
  const dropped = 'Request log rows given up, by reason (overflow: oldest pushed out while Postgres lagged; refused; timed_out; closed)'
  scrapedCounter(metrics.registry, 'switchboard_request_log_rows_dropped_total', dropped, ['reason'], (counter) => {
    if (requestLog === undefined) return
    const { dropped } = requestLog.stats()
    for (const reason of Object.keys(dropped) as (keyof typeof dropped)[]) counter.inc({ reason }, dropped[reason])
  })
  return {
    api: {
      logs: {
        search: async (query) => {
          const page = await searchLogs(pool, query)
          // The page names the keys of its own rows (as they were named then); the rest of the facets' keys by their names now.
          const named = new Set(Object.keys(page.facets.key_ids))
          for (const key of components.keyNames()) if (named.has(key.id) && page.key_names[key.id] === undefined) page.key_names[key.id] = key.name
          return page
        },
        read: (id) => readLog(pool, id),
      },
      now,
      enabled: () => init.enabled,
    },
    async close() {
      off()
      await requestLog?.close({ timeoutMs: 2_000 })
    },
  }
}
