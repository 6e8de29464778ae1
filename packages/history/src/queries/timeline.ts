/**
 * The timeline's cells: per bucket, entity and node, the worst state the node's snapshots
 * showed and whether any of them had the key held. Read from the snapshot rollups (migration
 * 0018: blocks of 6 min, 24 min and 2 h, kept by a trigger in the snapshots' own transaction)
 * wherever a whole block lies inside the window and inside one bucket, and from the
 * snapshots themselves for the rest (the window's ragged edges, the current partial block,
 * bucket sizes no block divides). Max and "any" combine exactly, so the answer is the one
 * the snapshots alone would give.
 */
import type pg from 'pg'
import { directionEntity } from '../entities.ts'

/** The rollup block sizes in seconds, smallest first; each divides the next and a day. Migration 0018 writes the same. */
export const ROLLUP_SECONDS = [360, 1440, 7200] as const

/** Where a window's cells come from: rollup blocks of one size over [fromMs, toMs), and snapshot ranges. */
export interface Cover {
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

/** One cell: a bucket (index of `bucket_seconds` since the epoch), an entity, a node. */
export interface TimelineCell {
  bucket: string
  entity: string
  provider: string
  model: string
  key_id: string | null
  node_id: string
  rank: number
  held: boolean
}

/** The cells of a window, from the rollups and the snapshots (see the file's comment). */
export async function readTimelineCells(
  pool: pg.Pool,
  window: { from: number; to: number },
  bucketSeconds: number,
  filters: { providers: string[] | null; models: string[] | null },
): Promise<TimelineCell[]> {
  const cover = coverWindow(window.from, window.to, bucketSeconds)
  const result = await pool.query<TimelineCell>(
    `WITH blocks AS (
       SELECT * FROM unnest($2::int[], $3::timestamptz[], $4::timestamptz[]) AS block(seconds, from_at, to_at)
     ), ranges AS (
       SELECT * FROM unnest($5::timestamptz[], $6::timestamptz[], $7::boolean[]) AS piece(from_at, to_at, closed)
     ), cells AS (
       SELECT floor(extract(epoch FROM rollup.bucket_at) / $1)::bigint AS bucket, rollup.entity, rollup.provider, rollup.model, rollup.key_id, rollup.node_id,
              rollup.rank::int AS rank, rollup.held
         FROM blocks JOIN history_snapshot_rollups rollup
           ON rollup.span_seconds = blocks.seconds AND rollup.bucket_at >= blocks.from_at AND rollup.bucket_at < blocks.to_at
        WHERE ($8::text[] IS NULL OR rollup.provider = ANY($8)) AND ($9::text[] IS NULL OR rollup.model = ANY($9))
       UNION ALL
       SELECT floor(extract(epoch FROM snapshot.at) / $1)::bigint, snapshot.entity, snapshot.provider, snapshot.model, snapshot.key_id, snapshot.node_id,
              CASE snapshot.state WHEN 'failed' THEN 3 WHEN 'degraded' THEN 2 WHEN 'recovering' THEN 1 ELSE 0 END, snapshot.held
         FROM ranges JOIN history_snapshots snapshot
           ON snapshot.at >= ranges.from_at AND (snapshot.at < ranges.to_at OR (ranges.closed AND snapshot.at = ranges.to_at))
        WHERE ($8::text[] IS NULL OR snapshot.provider = ANY($8)) AND ($9::text[] IS NULL OR snapshot.model = ANY($9))
     )
     SELECT bucket, entity, provider, model, key_id, node_id, max(rank) AS rank, bool_or(held) AS held
       FROM cells GROUP BY 1, 2, 3, 4, 5, 6`,
    [
      bucketSeconds,
      cover.blocks.map((block) => block.seconds),
      cover.blocks.map((block) => new Date(block.fromMs)),
      cover.blocks.map((block) => new Date(block.toMs)),
      cover.snapshots.map((range) => new Date(range.fromMs)),
      cover.snapshots.map((range) => new Date(range.toMs)),
      cover.snapshots.map((range) => range.closed),
      filters.providers,
      filters.models,
    ],
  )
  return result.rows
}

const STATE_BY_RANK = ['healthy', 'recovering', 'degraded', 'failed'] as const

/** Rows per direction with key rows; per bucket the worst state any node saw, the share of reporting nodes that saw it, and held. */
export function buildTimeline(rows: readonly TimelineCell[], bucketSeconds: number, keyName: (provider: string, keyId: string) => string | undefined) {
  type Cell = { ranks: number[]; held: boolean }
  const entities = new Map<string, { provider: string; model: string; keyId: string | null; cells: Map<string, Cell> }>()
  for (const row of rows) {
    let entity = entities.get(row.entity)
    if (entity === undefined) entities.set(row.entity, (entity = { provider: row.provider, model: row.model, keyId: row.key_id, cells: new Map() }))
    let cell = entity.cells.get(row.bucket)
    if (cell === undefined) entity.cells.set(row.bucket, (cell = { ranks: [], held: false }))
    cell.ranks.push(row.rank)
    cell.held ||= row.held
  }
  const buckets = (cells: Map<string, Cell>) =>
    [...cells.entries()]
      .sort((a, b) => Number(a[0]) - Number(b[0]))
      .map(([bucket, cell]) => {
        const worst = Math.max(...cell.ranks)
        return { at: new Date(Number(bucket) * bucketSeconds * 1000).toISOString(), state: STATE_BY_RANK[worst]!, share: round(cell.ranks.filter((rank) => rank === worst).length / cell.ranks.length), nodes: cell.ranks.length, held: cell.held }
      })
  const directions = new Map<string, { entity: string; provider: string; model: string; buckets: ReturnType<typeof buckets>; keys: { entity: string; key_id: string; key_name: string; buckets: ReturnType<typeof buckets> }[] }>()
  const directionOf = (provider: string, model: string) => {
    const entity = directionEntity(provider, model)
    let direction = directions.get(entity)
    if (direction === undefined) directions.set(entity, (direction = { entity, provider, model, buckets: [], keys: [] }))
    return direction
  }
  for (const [entity, item] of entities) {
    const direction = directionOf(item.provider, item.model)
    if (item.keyId === null) direction.buckets = buckets(item.cells)
    else direction.keys.push({ entity, key_id: item.keyId, key_name: keyName(item.provider, item.keyId) ?? item.keyId, buckets: buckets(item.cells) })
  }
  return [...directions.values()].sort((a, b) => a.entity.localeCompare(b.entity)).map((direction) => ({ ...direction, keys: direction.keys.sort((a, b) => a.key_name.localeCompare(b.key_name) || a.key_id.localeCompare(b.key_id)) }))
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000
}
