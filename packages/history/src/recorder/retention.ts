/**
 * Retention (design.md: "The cluster's leader drops partitions past retention once a day"):
 * whole day partitions are dropped, and closed episodes older than the window deleted. A
 * row in `store_meta` remembers the last run, so when two leaders overlap it runs once a day.
 */
import type pg from 'pg'
import { DAY_MS, dayStart, dropDayPartitionsBefore, retentionCutoff } from '../partitions/day-partitions.ts'
import { PARTITIONED_TABLES } from './tables.ts'

/** Runs retention if it has not run in the last day (or `force`); returns what it dropped, or null when skipped. */
export async function runRetention(pool: pg.Pool, options: { now: number; retentionDays: number; force?: boolean }): Promise<{ dropped: string[]; episodes: number } | null> {
  const claimed = await pool.query(
    `INSERT INTO store_meta (name, value, updated_at) VALUES ('history_retention_ran_at', to_jsonb($1::bigint), now())
     ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
     WHERE $2 OR (store_meta.value #>> '{}')::bigint <= $1 - $3
     RETURNING name`,
    [options.now, options.force === true, DAY_MS - 60_000],
  )
  if (claimed.rowCount === 0) return null
  const cutoff = retentionCutoff(options.now, options.retentionDays)
  const dropped = await dropDayPartitionsBefore(pool, PARTITIONED_TABLES, cutoff)
  // The rollups of the days just dropped (their blocks never straddle a day).
  await pool.query('DELETE FROM history_snapshot_rollups WHERE bucket_at < $1', [new Date(dayStart(cutoff))])
  await pool.query('DELETE FROM history_count_rollups WHERE bucket_at < $1', [new Date(dayStart(cutoff))])
  const episodes = await pool.query('DELETE FROM history_episodes WHERE closed_at IS NOT NULL AND closed_at < $1', [new Date(cutoff)])
  await pool.query(`DELETE FROM history_nodes WHERE last_seen_at < $1`, [new Date(cutoff)])
  return { dropped, episodes: episodes.rowCount ?? 0 }
}
