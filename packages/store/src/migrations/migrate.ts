/**
 * Applies pending migrations at boot. Every node runs this; a transaction-scoped
 * advisory lock serialises them, so when several boot at once the first applies
 * each migration and the others find it recorded in `schema_migrations`.
 */
import type { ClientBase, Pool } from 'pg'
import { migrations as allMigrations, type Migration } from './migrations.ts'
import { inTransaction } from '../transaction.ts'

/** Arbitrary constant naming our lock among any other advisory locks in the database. */
const migrationLockKey = 0x5357_4244 // "SWBD"

/** A database whose recorded migrations stop short of what a baseline replaces: no migration left brings it there. */
export class SchemaTooOldError extends Error {
  readonly code = 'schema_too_old'
  constructor(
    readonly latest: string,
    readonly baseline: Migration,
  ) {
    super(
      `The database's schema is at migration ${latest}; migration ${baseline.version} (${baseline.name}) takes over from ${baseline.baseline?.replaces} only. ` +
        `Migrate it with a release that still has migration ${baseline.baseline?.replaces}, or start from an empty database.`,
    )
    this.name = 'SchemaTooOldError'
  }
}

/** Applies every migration not yet recorded, all in one transaction; returns the versions applied. */
export async function migrate(pool: Pool, migrations: readonly Migration[] = allMigrations): Promise<{ applied: string[] }> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey])
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version text PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`)
    const done = await client.query<{ version: string }>('SELECT version FROM schema_migrations')
    const recorded = new Set(done.rows.map((row) => row.version))
    const applied: string[] = []
    for (const migration of [...migrations].sort((a, b) => a.version.localeCompare(b.version))) {
      if (recorded.has(migration.version)) continue
      await client.query(await statementsOf(client, migration, recorded))
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name])
      applied.push(migration.version)
    }
    return { applied }
  })
}

/**
 * What applying `migration` runs: its SQL, or for a baseline over a database migrated before it,
 * the upgrade from the migration it replaces (whose records it then replaces).
 */
async function statementsOf(client: ClientBase, migration: Migration, recorded: ReadonlySet<string>): Promise<string> {
  const baseline = migration.baseline
  const older = [...recorded].filter((version) => version < migration.version).sort()
  if (baseline === undefined || older.length === 0) return migration.sql
  if (!recorded.has(baseline.replaces)) throw new SchemaTooOldError(older.at(-1) as string, migration)
  await client.query('DELETE FROM schema_migrations WHERE version < $1', [migration.version])
  return baseline.upgrade
}
