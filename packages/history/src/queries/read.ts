/** The reads behind the history API: episodes and nodes of a window, an incident's events. */
import type pg from 'pg'
import type { NodeLiveness, StoredEpisode } from '../incidents/group.ts'
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

/** Episodes that may belong to incidents overlapping [from, to] (a margin either side for grouping). */
export async function loadEpisodes(pool: pg.Pool, from: number, to: number, marginMs = 120_000): Promise<StoredEpisode[]> {
  const result = await pool.query<EpisodeRow>(
    `SELECT node_id, region, id, entity, scope, provider, array_to_json(models)::text AS models, array_to_json(key_ids)::text AS key_ids,
            (extract(epoch FROM opened_at) * 1000)::float8 AS opened_ms, (extract(epoch FROM closed_at) * 1000)::float8 AS closed_ms,
            (extract(epoch FROM updated_at) * 1000)::float8 AS updated_ms, detail::text AS detail
       FROM history_episodes WHERE opened_at <= $2 AND (closed_at IS NULL OR closed_at >= $1)`,
    [new Date(from - marginMs), new Date(to + marginMs)],
  )
  return result.rows.map((row) => {
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
  })
}

/** Every node history knows, with its heartbeat. */
export async function loadNodes(pool: pg.Pool): Promise<Map<string, NodeLiveness>> {
  const result = await pool.query<{ node_id: string; region: string; last_seen_at: Date; stopped_at: Date | null }>('SELECT node_id, region, last_seen_at, stopped_at FROM history_nodes')
  return new Map(result.rows.map((row) => [row.node_id, { region: row.region, lastSeenAt: row.last_seen_at.getTime(), stoppedAt: row.stopped_at === null ? null : row.stopped_at.getTime() }]))
}

/** An event as the API shows it. */
export interface EventView {
  at: string
  node_id: string
  region: string
  kind: string
  entity: string
  provider: string | null
  model: string | null
  key_id: string | null
  [field: string]: unknown
}

interface EventRow {
  at: Date
  node_id: string
  region: string
  kind: string
  entity: string
  provider: string | null
  model: string | null
  key_id: string | null
  detail: Record<string, unknown>
}

const toView = (row: EventRow): EventView => ({ ...row.detail, at: row.at.toISOString(), node_id: row.node_id, region: row.region, kind: row.kind, entity: row.entity, provider: row.provider, model: row.model, key_id: row.key_id })

/** Events on `entities` in [from, to], oldest first. */
export async function loadEvents(pool: pg.Pool, entities: readonly string[], from: number, to: number, limit = 2_000): Promise<EventView[]> {
  const result = await pool.query<EventRow>(
    `SELECT at, node_id, region, kind, entity, provider, model, key_id, detail FROM history_events
      WHERE entity = ANY($1::text[]) AND at >= $2 AND at <= $3 ORDER BY at, node_id LIMIT $4`,
    [entities, new Date(from), new Date(to), limit],
  )
  return result.rows.map(toView)
}

/** Edits, deletes and settings changes in [from, to] (of `provider`, and every settings change). */
export async function loadChanges(pool: pg.Pool, provider: string, from: number, to: number): Promise<EventView[]> {
  const result = await pool.query<EventRow>(
    `SELECT at, node_id, region, kind, entity, provider, model, key_id, detail FROM history_events
      WHERE at >= $2 AND at <= $3 AND (kind = 'settings:changed' OR (kind IN ('key:edited', 'key:deleted', 'provider:edited', 'provider:deleted') AND provider = $1))
      ORDER BY at LIMIT 200`,
    [provider, new Date(from), new Date(to)],
  )
  return result.rows.map(toView)
}

/** The settings as the last settings change before `at` left them; null when none was recorded. */
export async function settingsAt(pool: pg.Pool, at: number): Promise<Record<string, unknown> | null> {
  const result = await pool.query<{ detail: { after?: Record<string, unknown> } }>(
    `SELECT detail FROM history_events WHERE kind = 'settings:changed' AND entity = 'settings' AND at <= $1 ORDER BY at DESC LIMIT 1`,
    [new Date(at)],
  )
  return result.rows[0]?.detail.after ?? null
}
