/**
 * Request-count rollups (issue 16): per node, the sums of `history_counts` over the same
 * aligned blocks as the snapshot rollups (0018: 6 min, 24 min, 2 h), so the dashboard's
 * figures sum a few hundred rows for a day instead of every direction's per-minute counts.
 * Kept by a statement trigger in the counts' own transaction; existing counts rolled up here.
 */
import type { Migration } from './migrations.ts'
import { SNAPSHOT_ROLLUP_SECONDS } from './0018-snapshot-rollups.ts'

const FIELDS = ['served', 'failed', 'redirected', 'fallback_served', 'routing_picked', 'caller_named', 'kept_failing', 'checks'] as const

/** The rollup of the count rows in `source` (a table or a transition table), added to what is there. */
const rollUp = (source: string) => `
  INSERT INTO history_count_rollups AS rollup (span_seconds, bucket_at, node_id, rows, ${FIELDS.join(', ')})
  SELECT span.seconds, to_timestamp(floor(extract(epoch FROM counted.at) / span.seconds) * span.seconds), counted.node_id, count(*),
         ${FIELDS.map((field) => `sum(counted.${field})`).join(', ')}
    FROM ${source} AS counted CROSS JOIN unnest(ARRAY[${SNAPSHOT_ROLLUP_SECONDS.join(', ')}]) AS span(seconds)
   GROUP BY 1, 2, 3
  ON CONFLICT (span_seconds, bucket_at, node_id) DO UPDATE SET
    rows = rollup.rows + EXCLUDED.rows, ${FIELDS.map((field) => `${field} = rollup.${field} + EXCLUDED.${field}`).join(', ')}`

/** Migration 0019: `history_count_rollups`, its trigger, and the rollup of the counts already written. */
export const countRollupsMigration: Migration = {
  version: '0019',
  name: 'history count rollups',
  sql: `
    CREATE TABLE history_count_rollups (
      span_seconds integer NOT NULL,
      bucket_at timestamptz NOT NULL,
      node_id text NOT NULL,
      rows bigint NOT NULL,
      ${FIELDS.map((field) => `${field} bigint NOT NULL`).join(',\n      ')},
      PRIMARY KEY (span_seconds, bucket_at, node_id)
    );

    CREATE FUNCTION history_count_rollup() RETURNS trigger LANGUAGE plpgsql AS $rollup$
    BEGIN
      ${rollUp('inserted')};
      RETURN NULL;
    END
    $rollup$;

    CREATE TRIGGER history_count_rollup AFTER INSERT ON history_counts
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION history_count_rollup();

    ${rollUp('history_counts')};
  `,
}
