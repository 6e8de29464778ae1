/** The reads behind the history API: episodes (all, the open tail, sealed slices) and nodes, an incident's events. */
import type pg from 'pg'
import type { NodeLiveness, StoredEpisode } from '../incidents/group.ts'
import { SLICE_MS, type SliceFingerprints } from '../incidents/sealed.ts'
import type { Episode } from '../tracker/types.ts'

/** Times as epoch ms (float8) and arrays and detail as JSON text: pg's date and array parsers cost more than the grouping. */
interface EpisodeRow {
  node_id: string
  region: string
  id: string
  entity: string
  scope: Episode['scope']
  provider: string
  models: string
  key_ids: string
  opened_ms: number
  closed_ms: number | null
  updated_ms: number
  detail: string
}

const EPISODE_COLUMNS = `node_id, region, id, entity, scope, provider, array_to_json(models)::text AS models, array_to_json(key_ids)::text AS key_ids,
            (extract(epoch FROM opened_at) * 1000)::float8 AS opened_ms, (extract(epoch FROM closed_at) * 1000)::float8 AS closed_ms,
            (extract(epoch FROM updated_at) * 1000)::float8 AS updated_ms, detail::text AS detail`

/** Every episode history holds (retention bounds the table). */
export async function loadAllEpisodes(pool: pg.Pool): Promise<StoredEpisode[]> {
  const result = await pool.query<EpisodeRow>(`SELECT ${EPISODE_COLUMNS} FROM history_episodes`)
  return result.rows.map(toEpisode)
}

/**
 * A row's part in its slice's fingerprint: any insert, update (a new row version, so a new
 * xmin) or delete of a closed episode changes the count or the sum of its slice.
 */
const ROW_HASH = `hashtextextended(node_id || '/' || id || '/' || xmin::text, 0)`
/** The slice an episode closed in (`sliceOf` of incidents/sealed.ts: hours since 1970). */
const CLOSED_SLICE = `floor(extract(epoch FROM closed_at) * 1000 / ${SLICE_MS})::int`

/**
 * In one statement (one snapshot): the fingerprint of every slice of episodes closed before
 * `horizon` (how many, and the sum of their row hashes), and the episodes still open or
 * closed since.
 */
export async function loadTail(pool: pg.Pool, horizon: number): Promise<{ slices: SliceFingerprints; tail: StoredEpisode[] }> {
  const result = await pool.query<Partial<EpisodeRow> & { slices: string }>(
    `SELECT (SELECT coalesce(json_agg(json_build_array(slice, n::text || ':' || h)), '[]')::text
               FROM (SELECT ${CLOSED_SLICE} AS slice, count(*) AS n, sum(${ROW_HASH}::numeric)::text AS h
                       FROM history_episodes WHERE closed_at < $1 GROUP BY 1) AS sealed) AS slices, live.*
       FROM (SELECT 1) AS one
       LEFT JOIN (SELECT ${EPISODE_COLUMNS} FROM history_episodes WHERE closed_at IS NULL OR closed_at >= $1) AS live ON true`,
    [new Date(horizon)],
  )
  const slices = new Map(JSON.parse(result.rows[0]?.slices ?? '[]') as [number, string][])
  const tail = result.rows.filter((row): row is EpisodeRow & { slices: string } => row.id !== null && row.id !== undefined).map(toEpisode)
  return { slices, tail }
}

/** Episodes closed before `horizon` in the given slices, with each slice's fingerprint (as `loadTail` computes it). */
export async function loadSealedSlices(pool: pg.Pool, horizon: number, slices: readonly number[]): Promise<{ slices: SliceFingerprints; episodes: StoredEpisode[] }> {
  const result = await pool.query<EpisodeRow & { slice: number; hash: string }>(
    `SELECT ${EPISODE_COLUMNS}, ${CLOSED_SLICE} AS slice, ${ROW_HASH}::text AS hash
       FROM history_episodes WHERE closed_at < $1 AND ${CLOSED_SLICE} = ANY($2::int[])`,
    [new Date(horizon), slices],
  )
  const sums = new Map<number, { count: number; sum: bigint }>()
  const episodes = result.rows.map((row) => {
    const seen = sums.get(row.slice) ?? { count: 0, sum: 0n }
    seen.count++
    seen.sum += BigInt(row.hash)
    sums.set(row.slice, seen)
    return toEpisode(row)
  })
  return { slices: new Map([...sums].map(([slice, { count, sum }]) => [slice, `${count}:${sum}`])), episodes }
}

function toEpisode(row: EpisodeRow): StoredEpisode {
  const detail = JSON.parse(row.detail) as Omit<Episode, 'id' | 'entity' | 'scope' | 'provider' | 'models' | 'keyIds' | 'openedAt' | 'closedAt' | 'updatedAt'>
  return {
    ...detail,
    nodeId: row.node_id,
    region: row.region,
    id: row.id,
    entity: row.entity,
    scope: row.scope,
    provider: row.provider,
    models: JSON.parse(row.models) as string[],
    keyIds: JSON.parse(row.key_ids) as string[],
    openedAt: Math.round(Number(row.opened_ms)),
    closedAt: row.closed_ms === null ? null : Math.round(Number(row.closed_ms)),
    updatedAt: Math.round(Number(row.updated_ms)),
    lost: detail.lost === true,
  }
}

/** Every node history knows, with its heartbeat. */
export async function loadNodes(pool: pg.Pool): Promise<Map<string, NodeLiveness>> {
  const result = await pool.query<{ node_id: string; region: string; last_seen_at: Date; stopped_at: Date | null }>('SELECT node_id, region, last_seen_at, stopped_at FROM history_nodes')
  return new Map(result.rows.map((row) => [row.node_id, { region: row.region, lastSeenAt: row.last_seen_at.getTime(), stoppedAt: row.stopped_at === null ? null : row.stopped_at.getTime() }]))
}

/** The columns of an event but its time and detail. */
interface EventColumns {
  node_id: string
  region: string
  kind: string
  entity: string
  provider: string | null
  model: string | null
  key_id: string | null
}

/** An event as the API shows it: its columns and its detail's fields. */
export interface EventView extends EventColumns {
  at: string
  [field: string]: unknown
}

/** The events `filter` (a WHERE clause, its ORDER and LIMIT) picks, as the API shows them. */
async function readEvents(pool: pg.Pool, filter: string, values: unknown[]): Promise<EventView[]> {
  const result = await pool.query<EventColumns & { at: Date; detail: Record<string, unknown> }>(`SELECT at, node_id, region, kind, entity, provider, model, key_id, detail FROM history_events ${filter}`, values)
  return result.rows.map(({ detail, ...row }) => ({ ...detail, ...row, at: row.at.toISOString() }))
}

/** Events on `entities` in [from, to], oldest first. */
export function loadEvents(pool: pg.Pool, entities: readonly string[], from: number, to: number, limit = 2_000): Promise<EventView[]> {
  return readEvents(pool, 'WHERE entity = ANY($1::text[]) AND at >= $2 AND at <= $3 ORDER BY at, node_id LIMIT $4', [entities, new Date(from), new Date(to), limit])
}

/** Edits, deletes and settings changes in [from, to] (of `provider`, and every settings change). */
export function loadChanges(pool: pg.Pool, provider: string, from: number, to: number): Promise<EventView[]> {
  return readEvents(
    pool,
    `WHERE at >= $2 AND at <= $3 AND (kind = 'settings:changed' OR (kind IN ('key:edited', 'key:deleted', 'provider:edited', 'provider:deleted') AND provider = $1)) ORDER BY at LIMIT 200`,
    [provider, new Date(from), new Date(to)],
  )
}

/**
 * The settings in force at `at`: as the last settings change at or before `at` left them, else
 * as the first change after `at` found them (nothing changed them in between, since every change
 * is recorded with its before); null when no change was ever recorded (today's are the ones).
 */
export async function settingsAt(pool: pg.Pool, at: number): Promise<Record<string, unknown> | null> {
  const result = await pool.query<{ settings: Record<string, unknown> | null }>(
    `(SELECT detail->'after' AS settings, 0 AS side FROM history_events WHERE kind = 'settings:changed' AND entity = 'settings' AND at <= $1 ORDER BY at DESC LIMIT 1)
     UNION ALL
     (SELECT detail->'before' AS settings, 1 AS side FROM history_events WHERE kind = 'settings:changed' AND entity = 'settings' AND at > $1 ORDER BY at ASC LIMIT 1)
     ORDER BY side LIMIT 1`,
    [new Date(at)],
  )
  return result.rows[0]?.settings ?? null
}
