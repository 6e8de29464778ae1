/**
 * The held-keys snapshot: the fleet's hold set written by a regional leader every 30 s and
 * read back by a starting node (design.md, "Cluster model"). The whole set is replaced in one
 * transaction, so a hold whose tombstone was collected cannot come back on restore; writes
 * are idempotent, so two leaders overlapping for a moment is harmless.
 */
import type { Pool } from 'pg'
import { inTransaction } from '../transaction.ts'

/** Serialises snapshot writes; distinct from the migration and import locks. */
const SNAPSHOT_LOCK = 0x5357_484b // "SWHK"

/** One stored entry: its id and the entry as routing serialized it. */
export interface StoredHold {
  id: string
  entry: unknown
}

/** Who wrote the last snapshot, and when. */
export interface SnapshotInfo {
  takenAt: Date
  nodeId: string
  region: string
  entries: number
}

/**
 * Replaces the stored hold set with `holds`, or, given a function, with what it returns for
 * the stored set: read, merge and write happen under one lock, so a leader cut off from the
 * fleet (but not from Postgres) merges what the other side's leader wrote instead of
 * overwriting it with an older set.
 */
export async function saveHoldSnapshot(pool: Pool, holds: readonly StoredHold[] | ((stored: StoredHold[]) => readonly StoredHold[]), by: { nodeId: string; region: string }): Promise<number> {
  // Leaders of two regions write at the same moment: one after the other, not interleaved.
  return inTransaction(pool, async (client) => {
    if (typeof holds === 'function') holds = holds((await client.query<StoredHold>('SELECT id, entry FROM held_keys')).rows)
    await client.query('DELETE FROM held_keys')
    if (holds.length > 0) {
      await client.query('INSERT INTO held_keys (id, entry) SELECT * FROM unnest($1::text[], $2::jsonb[])', [holds.map((hold) => hold.id), holds.map((hold) => JSON.stringify(hold.entry))])
    }
    await client.query(
      `INSERT INTO held_keys_snapshots (singleton, taken_at, node_id, region, entries) VALUES (true, now(), $1, $2, $3)
       ON CONFLICT (singleton) DO UPDATE SET taken_at = EXCLUDED.taken_at, node_id = EXCLUDED.node_id, region = EXCLUDED.region, entries = EXCLUDED.entries`,
      [by.nodeId, by.region, holds.length],
    )
    return holds.length
  }, SNAPSHOT_LOCK)
}

/** The stored hold set (empty when none was written yet). */
export async function loadHoldSnapshot(pool: Pool): Promise<{ holds: StoredHold[]; info: SnapshotInfo | null }> {
  const rows = await pool.query<{ id: string; entry: unknown }>('SELECT id, entry FROM held_keys')
  return { holds: rows.rows, info: await snapshotInfo(pool) }
}

/** Who wrote the last snapshot, and when; null before the first. */
export async function snapshotInfo(pool: Pool): Promise<SnapshotInfo | null> {
  const info = await pool.query<{ taken_at: Date; node_id: string; region: string; entries: number }>('SELECT taken_at, node_id, region, entries FROM held_keys_snapshots')
  const row = info.rows[0]
  return row ? { takenAt: row.taken_at, nodeId: row.node_id, region: row.region, entries: row.entries } : null
}
