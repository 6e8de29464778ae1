/**
 * Per-minute and per-hour counts of the request log (issue 15): for every minute (`span` 60)
 * and every hour (`span` 3600), node and combination of
 * the values `GET /api/logs` counts in its facets (provider, model, status, failure class, who
 * picked, moved off, check, added fallback, keys), how many requests. Each node writes them
 * with its rows, in the same transaction (history's request-log/minutes.ts), so they count
 * exactly the rows written. The facets and totals of a day then sum a few thousand rows instead
 * of every request of the day: 1.9M rows took 7.5 s to count (bench/LOG.md, "Stop 20").
 *
 * One row per span, minute or hour, node and combination (`combination` names it: the values as one text, or
 * its hash when long), added to by every batch that holds such requests (an upsert), so a busy
 * node's minute is a row per combination however many requests and batches it had.
 * `request_log_minutes_since` holds the first minute the counts cover: rows before it were
 * written without counts and are counted from `request_log` itself.
 *
 * Superseded by migration 0023 (narrow counts under `request_log_counts`): these tables stay for
 * nodes still running the code that writes them during an upgrade; the leader drops their
 * partitions with the log's, and a later migration can drop them. Its SQL stays as it shipped.
 */
import type { Migration } from './migrations.ts'

/** Migration 0022: `request_log_minutes` (minutes and hours), partitioned by day like `request_log`, and the minute it starts. */
export const requestLogMinutesMigration: Migration = {
  version: '0022',
  name: 'request log minutes',
  sql: `
    CREATE TABLE request_log_minutes (
      span integer NOT NULL,
      at timestamptz NOT NULL,
      node_id text NOT NULL,
      served_provider text,
      model text NOT NULL,
      status integer NOT NULL,
      failure_class text,
      picked_by text NOT NULL,
      moved_off boolean NOT NULL,
      is_check boolean NOT NULL,
      added_fallback_served boolean NOT NULL,
      key_ids text[] NOT NULL,
      combination text NOT NULL,
      requests integer NOT NULL
    ) PARTITION BY RANGE (at);
    CREATE UNIQUE INDEX request_log_minutes_key ON request_log_minutes (span, at, node_id, combination);

    CREATE TABLE request_log_minutes_since (since timestamptz NOT NULL);
    INSERT INTO request_log_minutes_since VALUES (date_trunc('minute', now()) + interval '1 minute');

    DO $$
    DECLARE child record;
    BEGIN
      FOR child IN SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
                     FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
                    WHERE h.inhparent = 'request_log'::regclass LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF request_log_minutes %s', replace(child.name, 'request_log_p', 'request_log_minutes_p'), child.bound);
      END LOOP;
    END $$;
  `,
}
