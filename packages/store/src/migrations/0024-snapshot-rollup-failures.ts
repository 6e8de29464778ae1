/**
 * The failures of each timeline bucket (issue 36, item 2): the snapshot rollups (0018) add up
 * the snapshots' `requests` and `errors` (upstream attempts on the route or direction since
 * the snapshot before, and how many failed), so a bucket says how many failed as well as the
 * worst state seen. The trigger now sums them; the rollups already written get the sums of
 * their snapshots here, with new snapshots kept out meanwhile (SHARE lock) so the sums are exact.
 */
import type { Migration } from './migrations.ts'
import { SNAPSHOT_ROLLUP_SECONDS } from './0018-snapshot-rollups.ts'

/** The block of `snapshot.at` for each block size, as 0018 computes it. */
const block = `to_timestamp(floor(extract(epoch FROM snapshot.at) / span.seconds) * span.seconds)`
const spans = `unnest(ARRAY[${SNAPSHOT_ROLLUP_SECONDS.join(', ')}]) AS span(seconds)`

/** Migration 0024: `requests` and `errors` on `history_snapshot_rollups`, summed by the trigger and filled in for existing blocks. */
export const snapshotRollupFailuresMigration: Migration = {
  version: '0024',
  name: 'history snapshot rollup failures',
  sql: `
    LOCK TABLE history_snapshots IN SHARE MODE;

    ALTER TABLE history_snapshot_rollups ADD COLUMN requests bigint NOT NULL DEFAULT 0, ADD COLUMN errors bigint NOT NULL DEFAULT 0;

    CREATE OR REPLACE FUNCTION history_snapshot_rollup() RETURNS trigger LANGUAGE plpgsql AS $rollup$
    BEGIN
      INSERT INTO history_snapshot_rollups AS rollup (span_seconds, bucket_at, entity, node_id, provider, model, key_id, rank, held, snapshots, requests, errors)
      SELECT span.seconds, ${block}, snapshot.entity, snapshot.node_id,
             min(snapshot.provider), min(snapshot.model), min(snapshot.key_id),
             max(CASE snapshot.state WHEN 'failed' THEN 3 WHEN 'degraded' THEN 2 WHEN 'recovering' THEN 1 ELSE 0 END), bool_or(snapshot.held), count(*),
             sum(snapshot.requests), sum(snapshot.errors)
        FROM inserted AS snapshot CROSS JOIN ${spans}
       GROUP BY 1, 2, 3, 4
      ON CONFLICT (span_seconds, bucket_at, entity, node_id) DO UPDATE SET
        rank = GREATEST(rollup.rank, EXCLUDED.rank), held = rollup.held OR EXCLUDED.held, snapshots = rollup.snapshots + EXCLUDED.snapshots,
        requests = rollup.requests + EXCLUDED.requests, errors = rollup.errors + EXCLUDED.errors;
      RETURN NULL;
    END
    $rollup$;

    UPDATE history_snapshot_rollups AS rollup SET requests = summed.requests, errors = summed.errors
      FROM (SELECT span.seconds AS span_seconds, ${block} AS bucket_at, snapshot.entity, snapshot.node_id, sum(snapshot.requests) AS requests, sum(snapshot.errors) AS errors
              FROM history_snapshots AS snapshot CROSS JOIN ${spans}
             GROUP BY 1, 2, 3, 4) AS summed
     WHERE rollup.span_seconds = summed.span_seconds AND rollup.bucket_at = summed.bucket_at AND rollup.entity = summed.entity AND rollup.node_id = summed.node_id;
  `,
}
