/**
 * Per-minute and per-hour counts of the request log, narrow (issue 15). Migration 0022's
 * counts kept every value of a combination as text in each row and each node sent them as
 * four statements with 14 parameters a count: for a varied mix that cost Postgres 13x and the
 * writer 4x what the rows alone cost (bench/README.md, "The request log read back").
 *
 * `request_log_combinations` holds each combination's values once (node, provider, model,
 * status, failure class, who picked, moved off, check, added fallback, keys), under the
 * 64-bit hash of them the writer names it by (history's request-log/minutes.ts); `last_day`
 * is the latest day whose counts name it, so the leader deletes it with the last partition
 * that does. `request_log_counts` is one row of four numbers per span (60: a minute, 3600: an
 * hour), time and combination, added to by every batch that holds such requests (an upsert)
 * in the batch's own transaction, so the counts hold exactly the rows written.
 * `request_log_counts_since` holds the first minute they cover: rows before it are counted
 * from `request_log` itself. 0022's tables are left to nodes still writing them.
 */
import type { Migration } from './migrations.ts'

/** Migration 0023: `request_log_combinations`, `request_log_counts` (partitioned by day like `request_log`), and the minute they start. */
export const requestLogCountsMigration: Migration = {
  version: '0023',
  name: 'request log counts',
  sql: `
    CREATE TABLE request_log_combinations (
      id bigint PRIMARY KEY,
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
      last_day date NOT NULL
    );

    CREATE TABLE request_log_counts (
      span integer NOT NULL,
      at timestamptz NOT NULL,
      combination bigint NOT NULL,
      requests integer NOT NULL
    ) PARTITION BY RANGE (at);
    CREATE UNIQUE INDEX request_log_counts_key ON request_log_counts (span, at, combination);

    CREATE TABLE request_log_counts_since (since timestamptz NOT NULL);
    INSERT INTO request_log_counts_since VALUES (date_trunc('minute', now()) + interval '1 minute');

    DO $$
    DECLARE child record;
    BEGIN
      FOR child IN SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
                     FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
                    WHERE h.inhparent = 'request_log'::regclass LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF request_log_counts %s', replace(child.name, 'request_log_p', 'request_log_counts_p'), child.bound);
      END LOOP;
    END $$;
  `,
}
