/**
 * Snapshot rollups (issue 16): per node and entity, the worst state and whether the key was
 * held over aligned blocks of 6 min, 24 min and 2 h, so the dashboard's timeline reads
 * thousands of rows for a day instead of every per-minute snapshot. A statement trigger on
 * `history_snapshots` keeps them in the same transaction as the snapshots it rolls up (late
 * and out-of-order writes included), so the rollup always answers what the snapshots would;
 * existing snapshots are rolled up here. Every block size divides a day, so retention, which
 * drops whole days of snapshots, deletes whole days of blocks (@switchboard/history).
 */
import type { Migration } from './migrations.ts'

/** The block sizes (seconds), each a multiple of the one before and a divisor of a day; @switchboard/history reads the same list. */
export const SNAPSHOT_ROLLUP_SECONDS = [360, 1440, 7200] as const

/** The rollup of the snapshot rows in `source` (a table or a transition table), merged into what is there. */
const rollUp = (source: string) => `
  INSERT INTO history_snapshot_rollups AS rollup (span_seconds, bucket_at, entity, node_id, provider, model, key_id, rank, held, snapshots)
  SELECT span.seconds, to_timestamp(floor(extract(epoch FROM snapshot.at) / span.seconds) * span.seconds), snapshot.entity, snapshot.node_id,
         min(snapshot.provider), min(snapshot.model), min(snapshot.key_id),
         max(CASE snapshot.state WHEN 'failed' THEN 3 WHEN 'degraded' THEN 2 WHEN 'recovering' THEN 1 ELSE 0 END), bool_or(snapshot.held), count(*)
    FROM ${source} AS snapshot CROSS JOIN unnest(ARRAY[${SNAPSHOT_ROLLUP_SECONDS.join(', ')}]) AS span(seconds)
   GROUP BY 1, 2, 3, 4
  ON CONFLICT (span_seconds, bucket_at, entity, node_id) DO UPDATE SET
    rank = GREATEST(rollup.rank, EXCLUDED.rank), held = rollup.held OR EXCLUDED.held, snapshots = rollup.snapshots + EXCLUDED.snapshots`

/** Migration 0018: `history_snapshot_rollups`, its trigger, and the rollup of the snapshots already written. */
export const snapshotRollupsMigration: Migration = {
  version: '0018',
  name: 'history snapshot rollups',
  sql: `
    CREATE TABLE history_snapshot_rollups (
      span_seconds integer NOT NULL,
      bucket_at timestamptz NOT NULL,
      entity text NOT NULL,
      node_id text NOT NULL,
      provider text NOT NULL,
      model text NOT NULL,
      key_id text,
      -- the worst state: 0 healthy, 1 recovering, 2 degraded, 3 failed
      rank smallint NOT NULL,
      held boolean NOT NULL,
      snapshots integer NOT NULL,
      PRIMARY KEY (span_seconds, bucket_at, entity, node_id)
    );

    CREATE FUNCTION history_snapshot_rollup() RETURNS trigger LANGUAGE plpgsql AS $rollup$
    BEGIN
      ${rollUp('inserted')};
      RETURN NULL;
    END
    $rollup$;

    CREATE TRIGGER history_snapshot_rollup AFTER INSERT ON history_snapshots
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION history_snapshot_rollup();

    ${rollUp('history_snapshots')};
  `,
}
