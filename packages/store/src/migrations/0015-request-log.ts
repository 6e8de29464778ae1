/**
 * The request log (issue 15): one row per inference request, partitioned by UTC day on `at`
 * (partitions made ahead and dropped whole past retention by @switchboard/history). The
 * columns the filters of `GET /api/logs` read are their own; `entry` is the whole log entry as
 * the API answers it. One index (the primary key): the log is written at request rate, so
 * every index is paid per request; filters run inside a time window.
 */
import type { Migration } from './migrations.ts'

/** Migration 0015: the request log table. */
export const requestLogMigration: Migration = {
  version: '0015',
  name: 'request log',
  sql: `
    CREATE TABLE request_log (
      at timestamptz NOT NULL,
      id uuid NOT NULL,
      node_id text NOT NULL,
      region text NOT NULL,
      surface text NOT NULL,
      gateway_key text,
      requested_provider text,
      requested_model text NOT NULL,
      session_id text,
      served_provider text,
      served_model text,
      served_key_id text,
      served_key_name text,
      key_ids text[] NOT NULL,
      status integer NOT NULL,
      failure_class text,
      latency_ms double precision NOT NULL,
      total_tokens integer,
      stream boolean NOT NULL,
      picked_by text NOT NULL,
      moved_off boolean NOT NULL,
      is_check boolean NOT NULL,
      added_fallback_served boolean NOT NULL,
      search text NOT NULL,
      entry json NOT NULL,
      PRIMARY KEY (at, id)
    ) PARTITION BY RANGE (at);
  `,
}
