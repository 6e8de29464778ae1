/**
 * The schema, as an append-only list of migrations. Never edit one that has
 * shipped: add a new one. Versions sort as strings, so keep them zero-padded.
 */

import { historyMigration } from './0014-history.ts'
import { requestLogMigration } from './0015-request-log.ts'
import { bedrockKeysMigration } from './0016-bedrock-keys.ts'
import { vertexKeysMigration } from './0017-vertex-keys.ts'
import { snapshotRollupsMigration } from './0018-snapshot-rollups.ts'
import { countRollupsMigration } from './0019-count-rollups.ts'
import { requestLogDetailMigration } from './0020-request-log-detail.ts'
import { requestLogBrinMigration } from './0021-request-log-brin.ts'
import { requestLogMinutesMigration } from './0022-request-log-minutes.ts'
import { requestLogCountsMigration } from './0023-request-log-counts.ts'
import { snapshotRollupFailuresMigration } from './0024-snapshot-rollup-failures.ts'

/** One schema change, applied once per database. */
export interface Migration {
  version: string
  name: string
  sql: string
}

/** Every migration, oldest first. */
export const migrations: readonly Migration[] = [
  {
    version: '0001',
    name: 'config store',
    sql: `
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
        -- keys keep the order they were configured in
        position integer NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (provider, id)
      );

      -- one row per setting so each field remembers who set it last
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
    `,
  },
  {
    version: '0002',
    name: 'held keys snapshot',
    sql: `
      -- The fleet's hold set (tombstones included), replaced whole by a regional leader
      -- every 30 s; entries are opaque to the store (routing validates them on restore).
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
    `,
  },
  {
    version: '0013',
    name: 'gateway keys',
    sql: `
      -- Keys callers of the inference API send. Only a SHA-256 of the secret is kept; a
      -- revoked key stays as a row (revoked_at set) so the same secret never comes back.
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
    `,
  },
  historyMigration,
  requestLogMigration,
  bedrockKeysMigration,
  vertexKeysMigration,
  snapshotRollupsMigration,
  countRollupsMigration,
  requestLogDetailMigration,
  requestLogBrinMigration,
  requestLogMinutesMigration,
  requestLogCountsMigration,
  snapshotRollupFailuresMigration,
]
