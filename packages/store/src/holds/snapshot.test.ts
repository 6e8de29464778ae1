import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate } from '../index.ts'
import { createTestDatabase, type TestDatabase } from '../../test/database.ts'
import { loadHoldSnapshot, saveHoldSnapshot } from './snapshot.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
  await migrate(database.pool)
})
afterAll(async () => {
  await database?.drop()
})

describe('held keys snapshot', () => {
  it('is empty before the first write, then replaced whole by each write', async () => {
    expect(await loadHoldSnapshot(database.pool)).toEqual({ holds: [], info: null })
    await saveHoldSnapshot(database.pool, [{ id: 'a', entry: { rung: 1 } }, { id: 'b', entry: { rung: 2 } }], { nodeId: 'node-1', region: 'eu' })
    await saveHoldSnapshot(database.pool, [{ id: 'b', entry: { rung: 3 } }], { nodeId: 'node-3', region: 'us' })
    const { holds, info } = await loadHoldSnapshot(database.pool)
    expect(holds).toEqual([{ id: 'b', entry: { rung: 3 } }])
    expect(info).toMatchObject({ nodeId: 'node-3', region: 'us', entries: 1, takenAt: expect.any(Date) })
  })

  it('is idempotent when two leaders write the same set at once', async () => {
    const set = Array.from({ length: 200 }, (_, index) => ({ id: `hold-${index}`, entry: { index } }))
    await Promise.all([saveHoldSnapshot(database.pool, set, { nodeId: 'node-1', region: 'eu' }), saveHoldSnapshot(database.pool, set, { nodeId: 'node-3', region: 'us' })])
    expect((await loadHoldSnapshot(database.pool)).holds).toHaveLength(200)
  })

  it('hands the stored set to a merging writer under the lock, so concurrent leaders each merge the other', async () => {
    await saveHoldSnapshot(database.pool, [], { nodeId: 'node-1', region: 'eu' })
    const merge = (mine: { id: string; entry: unknown }) => (stored: { id: string; entry: unknown }[]) => [...stored.filter((row) => row.id !== mine.id), mine]
    await Promise.all([
      saveHoldSnapshot(database.pool, merge({ id: 'left', entry: { side: 1 } }), { nodeId: 'node-1', region: 'eu' }),
      saveHoldSnapshot(database.pool, merge({ id: 'right', entry: { side: 2 } }), { nodeId: 'node-2', region: 'eu' }),
    ])
    expect((await loadHoldSnapshot(database.pool)).holds.map((row) => row.id).sort()).toEqual(['left', 'right'])
  })
})
