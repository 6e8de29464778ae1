/** Episodes are upserted (one row per node and episode, rewritten as it changes). */
import type pg from 'pg'
import type { Episode } from '../tracker/types.ts'
import { episodeColumns, type Stamped } from './tables.ts'

/** Upserts a batch of episodes in one statement; the latest copy of each wins. */
export async function upsertEpisodes(pool: pg.Pool, rows: readonly Stamped<Episode>[]): Promise<void> {
  const latest = new Map<string, Stamped<Episode>>()
  for (const row of rows) {
    const key = `${row.nodeId}\u0000${row.id}`
    const seen = latest.get(key)
    if (seen === undefined || seen.updatedAt <= row.updatedAt) latest.set(key, row)
  }
  const unique = [...latest.values()]
  const values = episodeColumns.map((column) => unique.map((row) => {
    const value = column.value(row)
    return column.type === 'jsonb' ? JSON.stringify(value) : value
  }))
  const casts = episodeColumns.map((column, index) => `$${index + 1}::${column.type}[]`).join(', ')
  const names = episodeColumns.map((column) => column.name)
  await pool.query(
    `INSERT INTO history_episodes (node_id, region, id, entity, scope, provider, models, key_ids, opened_at, closed_at, updated_at, detail)
     SELECT node_id, region, id, entity, scope, provider,
            ARRAY(SELECT jsonb_array_elements_text(models)), ARRAY(SELECT jsonb_array_elements_text(key_ids)),
            opened_at, closed_at, updated_at, detail
       FROM unnest(${casts}) AS input(${names.join(', ')})
     ON CONFLICT (node_id, id) DO UPDATE SET
       models = EXCLUDED.models, key_ids = EXCLUDED.key_ids, closed_at = EXCLUDED.closed_at,
       updated_at = EXCLUDED.updated_at, detail = EXCLUDED.detail
     WHERE history_episodes.updated_at <= EXCLUDED.updated_at`,
    values,
  )
}
