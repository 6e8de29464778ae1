/**
 * The baseline: the schema that migrations 0001-0026 built, created at once, less what they left
 * behind (migration 0022's wide request-log counts, superseded by 0023's and read by nothing, and
 * 0023's counts, superseded by 0026's). A database the old migrations brought to 0024 takes
 * `upgrade` instead (migrate.ts): it already has everything here but the leftovers to drop and
 * the counts to make. test/baseline-upgrade.test.ts compares the two paths' catalogs, with the
 * old migrations kept as data under test/fixtures/legacy-migrations/.
 *
 * What each part is for:
 * - Config store: providers, keys (in the order they were configured; Bedrock and Vertex
 *   credentials beside Azure's), settings (one row each, so each remembers who set it last),
 *   `store_meta`, the fleet's held-keys snapshot (replaced whole by a regional leader every
 *   30 s) and gateway keys (only a SHA-256 of the secret; a revoked key stays as a row so the
 *   same secret never comes back).
 * - History (issue 14): events, snapshots and per-minute counts partitioned by UTC day on `at`
 *   (partitions made ahead by @switchboard/history and dropped whole past retention);
 *   episodes and nodes small and plain.
 * - Rollups (issues 16, 36): per node and entity, the worst state, whether held, and the
 *   snapshots' attempts and failures over aligned blocks of 6 min, 24 min and 2 h; per node, the
 *   counts' sums over the same blocks. Statement triggers keep them in the transaction of the
 *   rows they roll up, so they always answer what the rows would.
 * - The request log (issue 15): one row per inference request, partitioned by day, indexed by
 *   BRIN on `at` only (every index is paid per request; a lookup by id carries its time).
 *   `detail` holds what the columns do not (history's request-log/entry.ts); `entry` holds the
 *   whole record of rows written before `detail` existed. `key_ids` is NULL for a request that
 *   tried no key but the one that served it.
 * - The request log's counts (issue 39): per span (60: a minute, 3600: an hour), time and
 *   combination of the values `GET /api/logs` counts in its facets (named in
 *   `request_log_combinations`), how many requests. Statement triggers on `request_log` add each
 *   statement's rows and take deleted ones off, in the statement's own transaction, as the
 *   rollups are kept: they count exactly the rows the log holds, and the gateway counts nothing.
 *   Partitioned by day like the log, so retention drops both together.
 */
import type { Migration } from './migrations.ts'
import { countRows, partitionsLikeTheLog, REQUEST_LOG_COUNTS } from './request-log-counts.ts'

/** The rollup block sizes (seconds), each a multiple of the one before and a divisor of a day; @switchboard/history reads the same list. */
export const SNAPSHOT_ROLLUP_SECONDS = [360, 1440, 7200] as const

const COUNT_FIELDS = ['served', 'failed', 'redirected', 'fallback_served', 'routing_picked', 'caller_named', 'kept_failing', 'checks'] as const
const block = (alias: string) => `to_timestamp(floor(extract(epoch FROM ${alias}.at) / span.seconds) * span.seconds)`
const spans = `unnest(ARRAY[${SNAPSHOT_ROLLUP_SECONDS.join(', ')}]) AS span(seconds)`

const CONFIG = `
  CREATE TABLE providers (
    name text PRIMARY KEY,
    type text NOT NULL,
    network_config jsonb,
    custom_provider_config jsonb,
    updated_at timestamptz NOT NULL DEFAULT now()
  );

  CREATE TABLE keys (
    provider text NOT NULL REFERENCES providers (name) ON DELETE CASCADE,
    id text NOT NULL,
    name text NOT NULL,
    value text NOT NULL,
    models text[] NOT NULL DEFAULT '{}',
    weight double precision NOT NULL DEFAULT 1,
    aliases jsonb,
    azure_key_config jsonb,
    position integer NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    bedrock_key_config jsonb,
    vertex_key_config jsonb,
    PRIMARY KEY (provider, id)
  );

  CREATE TABLE settings (
    name text PRIMARY KEY,
    value jsonb NOT NULL,
    origin text NOT NULL CHECK (origin IN ('config', 'api')),
    updated_at timestamptz NOT NULL DEFAULT now()
  );

  CREATE TABLE store_meta (
    name text PRIMARY KEY,
    value jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  );

  CREATE TABLE held_keys (
    id text PRIMARY KEY,
    entry jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  );

  CREATE TABLE held_keys_snapshots (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    taken_at timestamptz NOT NULL,
    node_id text NOT NULL,
    region text NOT NULL,
    entries integer NOT NULL
  );

  CREATE TABLE gateway_keys (
    id text PRIMARY KEY,
    name text NOT NULL,
    secret_hash text NOT NULL UNIQUE,
    redacted text NOT NULL,
    providers text[],
    models text[],
    requests_per_minute integer CHECK (requests_per_minute > 0),
    tokens_per_minute integer CHECK (tokens_per_minute > 0),
    origin text NOT NULL CHECK (origin IN ('config', 'api')),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
  );
  CREATE UNIQUE INDEX gateway_keys_active_name ON gateway_keys (name) WHERE revoked_at IS NULL;
`

const HISTORY = `
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
    ${COUNT_FIELDS.map((field) => `${field} integer NOT NULL DEFAULT 0`).join(',\n    ')}
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
`

const ROLLUPS = `
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
    requests bigint NOT NULL DEFAULT 0,
    errors bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (span_seconds, bucket_at, entity, node_id)
  );

  CREATE FUNCTION history_snapshot_rollup() RETURNS trigger LANGUAGE plpgsql AS $rollup$
  BEGIN
    INSERT INTO history_snapshot_rollups AS rollup (span_seconds, bucket_at, entity, node_id, provider, model, key_id, rank, held, snapshots, requests, errors)
    SELECT span.seconds, ${block('snapshot')}, snapshot.entity, snapshot.node_id,
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

  CREATE TRIGGER history_snapshot_rollup AFTER INSERT ON history_snapshots
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION history_snapshot_rollup();

  CREATE TABLE history_count_rollups (
    span_seconds integer NOT NULL,
    bucket_at timestamptz NOT NULL,
    node_id text NOT NULL,
    rows bigint NOT NULL,
    ${COUNT_FIELDS.map((field) => `${field} bigint NOT NULL`).join(',\n    ')},
    PRIMARY KEY (span_seconds, bucket_at, node_id)
  );

  CREATE FUNCTION history_count_rollup() RETURNS trigger LANGUAGE plpgsql AS $rollup$
  BEGIN
    INSERT INTO history_count_rollups AS rollup (span_seconds, bucket_at, node_id, rows, ${COUNT_FIELDS.join(', ')})
    SELECT span.seconds, ${block('counted')}, counted.node_id, count(*),
           ${COUNT_FIELDS.map((field) => `sum(counted.${field})`).join(', ')}
      FROM inserted AS counted CROSS JOIN ${spans}
     GROUP BY 1, 2, 3
    ON CONFLICT (span_seconds, bucket_at, node_id) DO UPDATE SET
      rows = rollup.rows + EXCLUDED.rows, ${COUNT_FIELDS.map((field) => `${field} = rollup.${field} + EXCLUDED.${field}`).join(', ')};
    RETURN NULL;
  END
  $rollup$;

  CREATE TRIGGER history_count_rollup AFTER INSERT ON history_counts
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION history_count_rollup();
`

const REQUEST_LOG = `
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
    key_ids text[],
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
    entry json,
    detail text
  ) PARTITION BY RANGE (at);
  CREATE INDEX request_log_at ON request_log USING brin (at) WITH (autosummarize = on);
`

/**
 * Migration 0026: the whole schema of 0001-0024 and of the migrations 0025 and 0026 that followed
 * them, on an empty database; on one the old migrations left at 0024, their leftovers dropped, the
 * request log's counts made anew and the rows already logged counted.
 */
export const baselineMigration: Migration = {
  version: '0026',
  name: 'baseline',
  sql: CONFIG + HISTORY + ROLLUPS + REQUEST_LOG + REQUEST_LOG_COUNTS,
  baseline: {
    replaces: '0024',
    // 0022's wide counts (their day partitions go with them), superseded by 0023's, read by nothing;
    // 0023's counts (combinations named by the gateway), superseded by those the log's trigger keeps.
    upgrade: `
    DROP TABLE IF EXISTS request_log_minutes, request_log_minutes_since;
    DROP TABLE request_log_counts, request_log_combinations, request_log_counts_since;
    ${REQUEST_LOG_COUNTS}
    ${partitionsLikeTheLog('request_log_counts')}
    ${countRows('request_log')};
    `,
  },
}
