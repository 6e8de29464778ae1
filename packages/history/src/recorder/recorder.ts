/**
 * The history recorder of one node: the pure tracker fed by the gateway, its output written
 * by batch writers (never on the request path), day partitions kept ahead, the node's
 * heartbeat, and a per-minute snapshot of every route and direction with the minute's
 * request counts. Spec: issue 14, "What to build" 1 and 2.
 */
import type pg from 'pg'
import { createBatchWriter, type BatchWriter, type BatchWriterStats } from '../writer/batch-writer.ts'
import { insertRows, type Column } from '../writer/insert.ts'
import { createDayPartitions } from '../partitions/day-partitions.ts'
import { NodeTracker, type HoldView, type TrackerOutput } from '../tracker/tracker.ts'
import type { RequestOutcome } from '../tracker/requests.ts'
import type { Episode, HistoryEvent, RouteView, Stamped } from '../tracker/types.ts'
import { countColumns, eventColumns, PARTITIONED_TABLES, snapshotColumns, upsertEpisodes } from './tables.ts'

/** What the recorder needs. */
export interface HistoryRecorderComponents {
  pool: pg.Pool
  now: () => number
  log?: (line: string) => void
  /** `history_enabled`: read at every input, so the setting applies live. */
  enabled: () => boolean
}

/** Options of the recorder. */
export interface HistoryRecorderInit {
  nodeId: string
  region: string
  /** Snapshot, count and heartbeat period. */
  snapshotIntervalMs: number
  /** Routes to snapshot (the balancer's routes); called once per snapshot period. */
  routes: () => readonly RouteView[]
}

/** The recorder of one node. Every method returns at once. */
export interface HistoryRecorder {
  /** Hold entries this node changed (`local`), or merged from a peer or Postgres (`peer`). */
  holds(entries: readonly HoldView[], origin: 'local' | 'peer'): void
  /** The routes after a recompute (every 5 s): state changes and episodes follow them. */
  routes(views: readonly RouteView[]): void
  request(outcome: RequestOutcome): void
  /** An event that is not routing's own: key/provider edits and deletes, settings changes. */
  record(event: Omit<HistoryEvent, 'at'> & { at?: number }): void
  /** The writers' counters, for /metrics. */
  stats(): BatchWriterStats[]
  /** Marks open episodes lost and the node stopped, flushes, stops the timers. */
  close(): Promise<void>
}

/** Starts recording: partitions made, stale episodes of this node's previous run closed, heartbeat begun. */
export async function startHistoryRecorder(components: HistoryRecorderComponents, init: HistoryRecorderInit): Promise<HistoryRecorder> {
  const { pool, now } = components
  const log = components.log ?? (() => {})
  const stamp = { nodeId: init.nodeId, region: init.region }
  const tracker = new NodeTracker(init.nodeId)

  const ensurePartitions = () => createDayPartitions(pool, PARTITIONED_TABLES, { fromMs: now(), daysAhead: 2 })
  // Off the boot path: the writers make a missing partition themselves.
  const keepPartitions = () => void ensurePartitions().catch((error: unknown) => log(`history: could not create the day partitions (tried again within the hour): ${String(error)}`))
  keepPartitions()
  // Episodes this node left open in an earlier run: nobody saw them close. Done before this run writes its own.
  const earlierRunClosed = pool
    .query(`UPDATE history_episodes SET detail = detail || '{"lost": true}', closed_at = COALESCE((SELECT last_seen_at FROM history_nodes WHERE node_id = $1), updated_at) WHERE node_id = $1 AND closed_at IS NULL`, [init.nodeId])
    .catch((error: unknown) => log(`history: could not close episodes of an earlier run: ${String(error)}`))

  const writer = <Row>(name: string, write: (rows: readonly Row[]) => Promise<void>): BatchWriter<Row> => createBatchWriter<Row>({ name, write, log })
  /** A writer of a day-partitioned table: a missing partition (the clock passed the days made ahead) is made, then the write retried once. */
  const partitioned = <Row>(name: string, table: string, columns: readonly Column<Row>[]) =>
    writer<Row>(name, async (rows) => {
      try {
        await insertRows(pool, table, columns, rows)
      } catch (error) {
        if ((error as { code?: string }).code !== '23514') throw error
        await ensurePartitions()
        await insertRows(pool, table, columns, rows)
      }
    })
  const events = partitioned('events', 'history_events', eventColumns)
  const snapshots = partitioned('snapshots', 'history_snapshots', snapshotColumns)
  const counts = partitioned('counts', 'history_counts', countColumns)
  const episodes = writer<Stamped<Episode>>('episodes', async (rows) => {
    await earlierRunClosed
    await upsertEpisodes(pool, rows)
  })
  const heartbeat = writer<{ at: number; stopped: boolean }>('nodes', async (rows) => {
    const last = rows[rows.length - 1]!
    await pool.query(
      `INSERT INTO history_nodes (node_id, region, started_at, last_seen_at, stopped_at) VALUES ($1, $2, $3, $3, $4)
       ON CONFLICT (node_id) DO UPDATE SET region = EXCLUDED.region, last_seen_at = EXCLUDED.last_seen_at, stopped_at = EXCLUDED.stopped_at`,
      [init.nodeId, init.region, new Date(last.at), last.stopped ? new Date(last.at) : null],
    )
  })
  const writers = [events, snapshots, counts, episodes, heartbeat]

  const emit = (out: TrackerOutput) => {
    for (const event of out.events) events.add({ ...event, ...stamp })
    // A copy: the tracker keeps changing its episodes after this.
    for (const episode of out.episodes) episodes.add({ ...episode, reasons: [...episode.reasons], models: [...episode.models], keyIds: [...episode.keyIds], checkOutcomes: { ...episode.checkOutcomes }, ...stamp })
  }

  const snapshotNow = () => {
    const at = now()
    heartbeat.add({ at, stopped: false })
    if (!components.enabled()) return
    for (const row of tracker.takeCounts(at)) counts.add({ ...row, ...stamp })
    for (const row of tracker.snapshot(init.routes(), at)) snapshots.add({ ...row, ...stamp })
    // Open episodes are rewritten each period, so readers see their traffic and counters move.
    emit({ events: [], episodes: [...tracker.open.values()] })
  }
  heartbeat.add({ at: now(), stopped: false })
  const timer = setInterval(snapshotNow, init.snapshotIntervalMs).unref()
  const partitionTimer = setInterval(keepPartitions, 3_600_000).unref()

  return {
    holds(entries, origin) {
      if (!components.enabled()) return
      const at = now()
      for (const entry of entries) emit(tracker.hold(entry, origin, at))
    },
    routes(views) {
      if (!components.enabled()) return
      emit(tracker.routes(views, now()))
    },
    request(outcome) {
      if (!components.enabled()) return
      emit(tracker.request(outcome))
    },
    record(event) {
      if (!components.enabled()) return
      // It concerns no episode (edits, deletes, settings): written as it is.
      events.add({ ...event, at: event.at ?? now(), ...stamp })
    },
    stats: () => writers.map((each) => each.stats()),
    async close() {
      clearInterval(timer)
      clearInterval(partitionTimer)
      const at = now()
      emit({ events: [], episodes: tracker.open.abandon(at) })
      heartbeat.add({ at, stopped: true })
      await Promise.all(writers.map((each) => each.close({ timeoutMs: 2_000 })))
    },
  }
}
