import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPool } from '../pool.ts'
import { createTestDatabase, type TestDatabase } from '../../test/database.ts'
import { migrate } from './migrate.ts'
import { migrations } from './migrations.ts'

describe('migrate', () => {
  let empty: TestDatabase
  let raced: TestDatabase
  let broken: TestDatabase
  beforeAll(async () => {
    ;[empty, raced, broken] = await Promise.all([createTestDatabase(), createTestDatabase(), createTestDatabase()])
  })
  afterAll(async () => {
    await Promise.all([empty.drop(), raced.drop(), broken.drop()])
  })

  it('applies every migration to an empty database, then nothing on the next boot', async () => {
    const first = await migrate(empty.pool)
    expect(first.applied).toEqual(migrations.map((migration) => migration.version))
    const tables = await empty.pool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    )
    // Other migrations add their own tables: these are the ones that must be there.
    expect(tables.rows.map((row) => row.table_name)).toEqual(expect.arrayContaining(['held_keys', 'held_keys_snapshots', 'keys', 'providers', 'schema_migrations', 'settings', 'store_meta']))
    expect(tables.rows.map((row) => row.table_name)).toEqual(expect.arrayContaining(['history_events', 'history_snapshots', 'history_counts', 'history_episodes', 'history_nodes']))
    expect(await migrate(empty.pool)).toEqual({ applied: [] })
  })

  it('applies each migration once when several pools migrate at the same moment', async () => {
    const pools = [raced.pool, createPool({ url: raced.url }), createPool({ url: raced.url }), createPool({ url: raced.url })]
    try {
      const results = await Promise.all(pools.map((pool) => migrate(pool)))
      const applied = results.flatMap((result) => result.applied)
      expect(applied.sort()).toEqual(migrations.map((migration) => migration.version).sort())
      const recorded = await raced.pool.query('SELECT version FROM schema_migrations')
      expect(recorded.rowCount).toBe(migrations.length)
    } finally {
      await Promise.all(pools.slice(1).map((pool) => pool.end()))
    }
  })

  it('rolls back a failing migration whole, recording nothing', async () => {
    const failing = [
      ...migrations,
      { version: '9999', name: 'half done', sql: 'CREATE TABLE half_done (id int); SELECT no_such_column FROM half_done' },
    ]
    await expect(migrate(broken.pool, failing)).rejects.toMatchObject({ code: '42703' })
    const recorded = await broken.pool.query("SELECT to_regclass('half_done') AS half_done, to_regclass('schema_migrations') AS migrations")
    expect(recorded.rows[0]).toEqual({ half_done: null, migrations: null })
    expect((await migrate(broken.pool)).applied).toEqual(migrations.map((migration) => migration.version))
  })
})
