/**
 * The request log of one node: records in, batched COPYs out (the shared batch writer: bounded,
 * oldest dropped and counted), day partitions made ahead, and once a day the partitions past
 * retention dropped by the region's leader. The listener only buffers: never on the request path.
 */
import type pg from 'pg'
import { createBatchWriter, type BatchWriterStats } from '../writer/batch-writer.ts'
import { inTransaction } from '@switchboard/store'
import { createDayPartitions, DAY_MS, dayName, dropDayPartitionsBefore, retentionCutoff } from '../partitions/day-partitions.ts'
import type { RequestRecord } from './record.ts'
import { batchOf, insertRows, REQUEST_LOG_TABLE, rowBytes } from './rows.ts'
import { REQUEST_LOG_COMBINATIONS_TABLE, REQUEST_LOG_COUNTS_TABLE, REQUEST_LOG_FACET_COUNTS_TABLE } from './counts.ts'

export interface RequestLogComponents {
  pool: pg.Pool
  now: () => number
  /** True on the node that drops old partitions (the region's leader); asked once a day. */
  isLeader: () => boolean | Promise<boolean>
  log?: (line: string) => void
  /** Each batch written: its rows and how long the insert took (for /metrics). */
  onWritten?: (rows: number, seconds: number) => void
}

export interface RequestLogInit {
  /** Days kept; older day partitions are dropped. Default 7. */
  retentionDays?: number
  /** Rows buffered at most before the oldest are dropped; default 50 000. */
  capacity?: number
  /** How often a partly filled buffer is written; default 250 ms. */
  flushIntervalMs?: number
}

/** The request log of one node. */
export type RequestLog = ReturnType<typeof createRequestLog>

/** Rows per COPY: larger binary COPYs cost Postgres more per row (bench/LOG.md, "Stop 15"). */
const BATCH_ROWS = 250
/** How often partitions are made ahead and retention is applied (drops happen once a day). */
const MAINTAIN_EVERY_MS = 3_600_000
/** How often the BRIN index of today's and yesterday's partitions is brought up to the newest rows. */
const SUMMARIZE_EVERY_MS = 30_000
/** The log's tables, partitioned alike by day: its rows and their per-minute and per-hour counts (kept by a trigger on the rows: counts.ts). */
const TABLES = [REQUEST_LOG_TABLE, REQUEST_LOG_COUNTS_TABLE, REQUEST_LOG_FACET_COUNTS_TABLE]
/**
 * Records wait as objects until the end of the event loop's turn that made them (or this many
 * arrived), then are encoded together: the encoder runs warm, and the records
 * still die young (staged 50 ms, they cost ~8 µs a request in GC: bench/LOG.md, "Stops 17-19").
 */
const STAGE_ROWS = 128

/**
 * No vacuum for inserts on the log's partitions (Postgres 13+): on an append-only log it reads
 * back and logs again every page just written, for a visibility map nothing reads, at about twice
 * the COPY's CPU (bench/LOG.md, "Stops 17-19"). Dead rows and the wraparound guard still vacuum.
 */
export const PARTITION_STORAGE = 'autovacuum_vacuum_insert_threshold = -1'

/**
 * Summarizes the unsummarized BRIN ranges (its only index) of the named partitions: autovacuum's
 * `autosummarize` did not run under steady load, and an unsummarized range is read by every query
 * (bench/LOG.md, "Stops 17-19"). A node that waits 200 ms for another's lock gives up until next time.
 */
const SUMMARIZE_SQL = `
  SELECT coalesce(sum(brin_summarize_new_values(i.indexrelid::regclass)), 0)::int AS ranges
    FROM pg_inherits h
    JOIN pg_index i ON i.indrelid = h.inhrelid
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_am a ON a.oid = c.relam
   WHERE h.inhparent = '${REQUEST_LOG_TABLE}'::regclass AND a.amname = 'brin' AND h.inhrelid::regclass::text = ANY($1::text[])`
/** Postgres's lock_not_available: another node is summarizing. */
const LOCK_NOT_AVAILABLE = '55P03'

/** Creates the request log of one node. */
export function createRequestLog(components: RequestLogComponents, init: RequestLogInit = {}) {
  const { pool, now } = components
  const log = components.log ?? (() => {})
  const retentionDays = init.retentionDays ?? 7
  // Rows wait as bytes: a Buffer per row (rows.ts, `rowBytes`).
  const writer = createBatchWriter<Buffer>({
    name: 'request_log',
    capacity: init.capacity ?? 50_000,
    batchSize: BATCH_ROWS,
    flushIntervalMs: init.flushIntervalMs ?? 250,
    log,
    write: async (rows) => {
      const data = batchOf(rows)
      const started = performance.now()
      await insertRows(pool, data)
      components.onWritten?.(rows.length, (performance.now() - started) / 1000)
    },
  })
  let lastRetention = 0
  let timer: NodeJS.Timeout | undefined
  let summarizeTimer: NodeJS.Timeout | undefined

  const applyRetention = async () => {
    const cutoff = retentionCutoff(now(), retentionDays)
    const dropped = await dropDayPartitionsBefore(pool, TABLES, cutoff)
    // The combinations no day kept counts any more (the last day that counted each is on it).
    await pool.query(`DELETE FROM ${REQUEST_LOG_COMBINATIONS_TABLE} WHERE last_day < $1::date`, [new Date(cutoff).toISOString().slice(0, 10)])
    if (dropped.length > 0) log(`request log: dropped ${dropped.length} day partition(s) past ${retentionDays} days of retention: ${dropped.join(', ')}`)
    return dropped
  }
  const upkeepOnce = async () => {
    try {
      // Yesterday too: a node whose clock lags a little still has somewhere to write.
      await createDayPartitions(pool, TABLES, { fromMs: now(), daysAhead: 2, daysBehind: 1, storage: PARTITION_STORAGE })
      if (now() - lastRetention >= DAY_MS && (await components.isLeader())) {
        lastRetention = now()
        await applyRetention()
      }
    } catch (error) {
      log(`request log: partition upkeep failed (retried within the hour): ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  const summarizeOnce = () =>
    inTransaction(pool, async (client) => {
      await client.query("SET LOCAL lock_timeout = '200ms'")
      const partitions = [now(), now() - DAY_MS].map((ms) => `${REQUEST_LOG_TABLE}_p${dayName(ms)}`)
      const result = await client.query<{ ranges: number }>(SUMMARIZE_SQL, [partitions])
      return result.rows[0]?.ranges ?? 0
    })
  /** The summarizing running now, so `close` waits for it too. */
  let summarizing: Promise<number> | undefined
  const summarize = () => (summarizing ??= summarizeOnce().finally(() => (summarizing = undefined)))
  const summarizeQuietly = () =>
    void summarize().catch((error: unknown) => {
      if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) return
      log(`request log: summarizing its index failed (tried again in ${SUMMARIZE_EVERY_MS / 1000} s): ${error instanceof Error ? error.message : String(error)}`)
    })

  /** The upkeep running now, so `close` waits for it instead of ending the pool under it (a stop right after a start). */
  let upkeep: Promise<void> | undefined
  const maintain = () => (upkeep ??= upkeepOnce().finally(() => (upkeep = undefined)))

  // The record dies young; the writer keeps its bytes (and never throws).
  const encodeOne = (record: RequestRecord) => {
    try {
      writer.add(rowBytes(record))
    } catch (error) {
      log(`request log: a record could not be serialized, dropped: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  /** Records not encoded yet (at most STAGE_ROWS, until the end of this turn of the event loop). */
  const staged: RequestRecord[] = []
  let stageImmediate: NodeJS.Immediate | undefined
  const encodeStaged = () => {
    if (stageImmediate !== undefined) clearImmediate(stageImmediate)
    stageImmediate = undefined
    for (let index = 0; index < staged.length; index++) encodeOne(staged[index] as RequestRecord)
    staged.length = 0
  }

  return {
    /** Hand this to the gateway's request recorder. Never blocks, never throws. */
    listener: (record: RequestRecord): void => {
      staged.push(record)
      if (staged.length >= STAGE_ROWS) encodeStaged()
      else stageImmediate ??= setImmediate(encodeStaged).unref()
    },
    /** Starts the upkeep: today's and the next days' partitions at once, then hourly; resolves when the first round is done (errors are logged, not thrown). */
    async start(): Promise<void> {
      await maintain()
      timer ??= setInterval(() => void maintain(), MAINTAIN_EVERY_MS).unref()
      summarizeTimer ??= setInterval(summarizeQuietly, SUMMARIZE_EVERY_MS).unref()
    },
    stats: (): BatchWriterStats => {
      const stats = writer.stats()
      return { ...stats, buffered: stats.buffered + staged.length }
    },
    /** Writes what is buffered; resolves when done or given up. */
    flush: (): Promise<void> => {
      encodeStaged()
      return writer.flush()
    },
    /** Applies retention now (the leader's daily job); returns the partitions dropped. */
    applyRetention,
    /** Summarizes the BRIN ranges of today's and yesterday's partitions not summarized yet (every `SUMMARIZE_EVERY_MS`); returns how many. */
    summarize,
    /** Flushes within `timeoutMs` (default 5 s) and stops. */
    async close(options?: { timeoutMs?: number }): Promise<void> {
      clearInterval(timer)
      clearInterval(summarizeTimer)
      timer = summarizeTimer = undefined
      await upkeep
      await summarizing?.catch(() => {})
      encodeStaged()
      await writer.close(options)
    },
  }
}
