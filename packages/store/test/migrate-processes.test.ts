/** Several nodes booting at once, as separate processes, against one empty database. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../src/index.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'
import { runFixture } from './processes.ts'

describe('migrations from several processes at once', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
  })
  afterAll(() => database.drop())

  it('applies each migration exactly once', async () => {
    const results = await Promise.all([1, 2, 3].map(() => runFixture<{ applied: string[] }>('migrate-child', [database.url])))
    const applied = results.flatMap((result) => result.applied)
    expect(applied.sort()).toEqual(migrations.map((migration) => migration.version).sort())
    const recorded = await database.pool.query('SELECT version FROM schema_migrations')
    expect(recorded.rowCount).toBe(migrations.length)
  })
})
