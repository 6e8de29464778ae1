/**
 * History (issue 14): what routing saw and did, per node. Events, snapshots and counts are
 * partitioned by UTC day on `at` (partitions made ahead by @switchboard/history, dropped
 * whole past retention); episodes (one node's view of one problem, grouped into incidents
 * when read) and nodes are small and plain.
 */
import type { Migration } from './migrations.ts'

/** Migration 0014: the history tables. */
export const historyMigration: Migration = {
  version: '0014',
  name: 'routing history',
  sql: `
    CREATE TABLE history_events (
      at timestamptz NOT NULL,
      node_id text NOT NULL,
      region text NOT NULL,
      entity text NOT NULL,
      kind text NOT NULL,
      provider text,
      model text,
      key_id text,
      detail jsonb NOT NULL DEFAULT '{}'
    ) PARTITION BY RANGE (at);
    CREATE INDEX history_events_entity_at ON history_events (entity, at);
    CREATE INDEX history_events_at ON history_events (at);

    CREATE TABLE history_snapshots (
      at timestamptz NOT NULL,
      node_id text NOT NULL,
      region text NOT NULL,
      entity text NOT NULL,
      provider text NOT NULL,
      model text NOT NULL,
      key_id text,
      state text NOT NULL,
      held boolean NOT NULL DEFAULT false,
      weight double precision NOT NULL,
      score double precision NOT NULL,
      error_penalty double precision NOT NULL,
      latency_penalty double precision NOT NULL,
      utilisation double precision NOT NULL,
      recovery double precision NOT NULL,
      requests integer NOT NULL,
      errors integer NOT NULL,
      latency_ms double precision
    ) PARTITION BY RANGE (at);
    CREATE INDEX history_snapshots_entity_at ON history_snapshots (entity, at);
    CREATE INDEX history_snapshots_at ON history_snapshots (at);

    CREATE TABLE history_counts (
      at timestamptz NOT NULL,
      node_id text NOT NULL,
      region text NOT NULL,
      provider text NOT NULL,
      model text NOT NULL,
      served integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      redirected integer NOT NULL DEFAULT 0,
      fallback_served integer NOT NULL DEFAULT 0,
      routing_picked integer NOT NULL DEFAULT 0,
      caller_named integer NOT NULL DEFAULT 0,
      kept_failing integer NOT NULL DEFAULT 0,
      checks integer NOT NULL DEFAULT 0
    ) PARTITION BY RANGE (at);
    CREATE INDEX history_counts_at ON history_counts (at);

    CREATE TABLE history_episodes (
      node_id text NOT NULL,
      id text NOT NULL,
      region text NOT NULL,
      entity text NOT NULL,
      scope text NOT NULL,
      provider text NOT NULL,
      models text[] NOT NULL DEFAULT '{}',
      key_ids text[] NOT NULL DEFAULT '{}',
      opened_at timestamptz NOT NULL,
      closed_at timestamptz,
      updated_at timestamptz NOT NULL,
      detail jsonb NOT NULL,
      PRIMARY KEY (node_id, id)
    );
    CREATE INDEX history_episodes_window ON history_episodes (opened_at, closed_at);

    CREATE TABLE history_nodes (
      node_id text PRIMARY KEY,
      region text NOT NULL,
      started_at timestamptz NOT NULL,
      last_seen_at timestamptz NOT NULL,
      stopped_at timestamptz
    );
  `,
}
