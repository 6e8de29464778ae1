/**
 * The timeline's cells: per bucket, entity and node, the worst state the node's snapshots
 * showed (each snapshot holds the worst state since the one before: tracker/snapshot.ts),
 * whether any of them had the key held, and the upstream attempts and failures they counted.
 * Read from the snapshot rollups (the baseline migration: blocks of 6 min, 24 min and 2 h, kept by a
 * trigger in the snapshots' own transaction, with their sums) wherever a whole block lies
 * inside the window and inside one bucket, and from the snapshots themselves for the rest (the
 * window's ragged edges, the current partial block, bucket sizes no block divides). Max, "any"
 * and sums combine exactly, so the answer is the one the snapshots alone would give.
 */
import type pg from 'pg'
import { directionEntity } from '../entities.ts'
import { STATE_BY_RANK } from '../tracker/episodes.ts'

/** The rollup block sizes in seconds, smallest first; each divides the next and a day. The baseline migration writes the same. */
export const ROLLUP_SECONDS = [360, 1440, 7200] as const

/** Where a window's cells come from: rollup blocks of one size over [fromMs, toMs), and snapshot ranges. */
interface Cover {
  blocks: { seconds: number; fromMs: number; toMs: number }[]
  /** [fromMs, toMs), or [fromMs, toMs] when `closed` (the window's own end is inclusive). */
  snapshots: { fromMs: number; toMs: number; closed: boolean }[]
}

/**
 * Splits the window [fromMs, toMs] (both inclusive, as the API reads them) into the largest
 * whole rollup blocks that fit, of the sizes that divide the bucket (so a block never
 * straddles two buckets), and snapshot ranges for what is left. Pure.
 */
export function coverWindow(fromMs: number, toMs: number, bucketSeconds: number, sizes: readonly number[] = ROLLUP_SECONDS): Cover {
  const usable = sizes.filter((seconds) => bucketSeconds % seconds === 0).sort((a, b) => b - a)
  const cover: Cover = { blocks: [], snapshots: [] }
  // Half-open [from, to) pieces, largest blocks first; what no block covers goes to the snapshots.
  const split = (from: number, to: number, level: number) => {
    if (from >= to) return
    const seconds = usable[level]
    if (seconds === undefined) {
      cover.snapshots.push({ fromMs: from, toMs: to, closed: false })
      return
    }
    const size = seconds * 1000
    const first = Math.ceil(from / size) * size
    const last = Math.floor(to / size) * size
    if (first >= last) return split(from, to, level + 1)
    split(from, first, level + 1)
    cover.blocks.push({ seconds, fromMs: first, toMs: last })
    split(last, to, level + 1)
  }
  split(fromMs, toMs, 0)
  // The window's end is inclusive: a snapshot at exactly `to` counts, so the last snapshot range (or a new point range) closes.
  const tail = cover.snapshots.at(-1)
  if (tail !== undefined && tail.toMs === toMs) tail.closed = true
  else cover.snapshots.push({ fromMs: toMs, toMs, closed: true })
  cover.blocks.sort((a, b) => a.fromMs - b.fromMs)
  cover.snapshots.sort((a, b) => a.fromMs - b.fromMs)
  return cover
}

/**
 * One cell: a bucket (index of `bucket_seconds` since the epoch) of an entity, over the nodes
 * that reported in it: the worst state any node saw (its rank: 0 healthy, 1 recovering,
 * 2 degraded, 3 failed), how many nodes saw that worst, how many reported, whether any held
 * the key, and the upstream attempts of every node in it and how many of them failed.
 */
interface TimelineCell {
  bucket: string
  entity: string
  provider: string
  model: string
  key_id: string | null
  worst: number
  at_worst: number
  nodes: number
  held: boolean
  requests: number
  failed: number
}

/** The cells of a window, from the rollups and the snapshots (see the file's comment), by entity then bucket. */
export async function readTimelineCells(
  pool: pg.Pool,
  window: { from: number; to: number },
  bucketSeconds: number,
  filters: { providers: string[] | null; models: string[] | null },
): Promise<TimelineCell[]> {
  const cover = coverWindow(window.from, window.to, bucketSeconds)
  // Each range as its own condition on constants, so the planner scans the index of each day
  // partition it touches (a join against a list of ranges scanned every snapshot of every day).
  const params: unknown[] = [bucketSeconds, filters.providers, filters.models]
  const add = (value: unknown) => `$${params.push(value)}`
  const blocks = cover.blocks.map((block) => `(rollup.span_seconds = ${add(block.seconds)} AND rollup.bucket_at >= ${add(new Date(block.fromMs))} AND rollup.bucket_at < ${add(new Date(block.toMs))})`)
  const ranges = cover.snapshots.map((range) => `(snapshot.at >= ${add(new Date(range.fromMs))} AND snapshot.at ${range.closed ? '<=' : '<'} ${add(new Date(range.toMs))})`)
  // Per node first (its worst over the bucket's blocks and snapshots), then over the nodes.
  const result = await pool.query<TimelineCell>(
    `WITH cells AS (
       SELECT floor(extract(epoch FROM rollup.bucket_at) / $1)::bigint AS bucket, rollup.entity, rollup.provider, rollup.model, rollup.key_id, rollup.node_id,
              rollup.rank::int AS rank, rollup.held, rollup.requests, rollup.errors
         FROM history_snapshot_rollups rollup
        WHERE (${blocks.join(' OR ') || 'false'}) AND ($2::text[] IS NULL OR rollup.provider = ANY($2)) AND ($3::text[] IS NULL OR rollup.model = ANY($3))
       UNION ALL
       SELECT floor(extract(epoch FROM snapshot.at) / $1)::bigint, snapshot.entity, snapshot.provider, snapshot.model, snapshot.key_id, snapshot.node_id,
              CASE snapshot.state WHEN 'failed' THEN 3 WHEN 'degraded' THEN 2 WHEN 'recovering' THEN 1 ELSE 0 END, snapshot.held, snapshot.requests, snapshot.errors
         FROM history_snapshots snapshot
        WHERE (${ranges.join(' OR ') || 'false'}) AND ($2::text[] IS NULL OR snapshot.provider = ANY($2)) AND ($3::text[] IS NULL OR snapshot.model = ANY($3))
     ), per_node AS (
       SELECT bucket, entity, provider, model, key_id, node_id, max(rank) AS rank, bool_or(held) AS held,
              sum(requests) AS requests, sum(errors) AS errors FROM cells GROUP BY 1, 2, 3, 4, 5, 6
     )
     SELECT bucket, entity, provider, model, key_id, max(rank) AS worst,
            (CASE max(rank) WHEN 3 THEN count(*) FILTER (WHERE rank = 3) WHEN 2 THEN count(*) FILTER (WHERE rank = 2)
                            WHEN 1 THEN count(*) FILTER (WHERE rank = 1) ELSE count(*) FILTER (WHERE rank = 0) END)::int AS at_worst,
            count(*)::int AS nodes, bool_or(held) AS held, sum(requests)::float8 AS requests, sum(errors)::float8 AS failed
       FROM per_node GROUP BY 1, 2, 3, 4, 5 ORDER BY entity, bucket`,
    params,
  )
  return result.rows
}

/**
 * Rows per direction with key rows; per bucket the worst state any node saw, the share of
 * reporting nodes that saw it, held, and the upstream attempts (`requests`) and failed ones (`failed`).
 */
export function buildTimeline(cells: readonly TimelineCell[], bucketSeconds: number, keyName: (provider: string, keyId: string) => string | undefined) {
  type Bucket = { at: string; state: (typeof STATE_BY_RANK)[number]; share: number; nodes: number; held: boolean; requests: number; failed: number }
  type Key = { entity: string; key_id: string; key_name: string; buckets: Bucket[] }
  type Direction = { entity: string; provider: string; model: string; buckets: Bucket[]; keys: Key[] }
  // A window has few distinct buckets and many cells: each bucket's time is formatted once.
  const times = new Map<string, string>()
  const timeOf = (bucket: string) => {
    let at = times.get(bucket)
    if (at === undefined) times.set(bucket, (at = new Date(Number(bucket) * bucketSeconds * 1000).toISOString()))
    return at
  }
  const directions = new Map<string, Direction>()
  const bucketsOf = new Map<string, Bucket[]>()
  for (const cell of cells) {
    let buckets = bucketsOf.get(cell.entity)
    if (buckets === undefined) {
      bucketsOf.set(cell.entity, (buckets = []))
      const directionKey = directionEntity(cell.provider, cell.model)
      let direction = directions.get(directionKey)
      if (direction === undefined) directions.set(directionKey, (direction = { entity: directionKey, provider: cell.provider, model: cell.model, buckets: [], keys: [] }))
      if (cell.key_id === null) direction.buckets = buckets
      else direction.keys.push({ entity: cell.entity, key_id: cell.key_id, key_name: keyName(cell.provider, cell.key_id) ?? cell.key_id, buckets })
    }
    buckets.push({ at: timeOf(cell.bucket), state: STATE_BY_RANK[cell.worst]!, share: round(cell.at_worst / cell.nodes), nodes: cell.nodes, held: cell.held, requests: cell.requests, failed: cell.failed })
  }
  // Cells come by entity then bucket (readTimelineCells); sorted here too, so any order gives the same answer.
  for (const buckets of bucketsOf.values()) buckets.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
  return [...directions.values()].sort((a, b) => a.entity.localeCompare(b.entity)).map((direction) => ({ ...direction, keys: direction.keys.sort((a, b) => a.key_name.localeCompare(b.key_name) || a.key_id.localeCompare(b.key_id)) }))
}

/** `value` to three decimals, as the API's fractions are given. */
export function round(value: number): number {
  return Math.round(value * 1000) / 1000
}
