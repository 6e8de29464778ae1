import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate } from '@switchboard/store'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import { createDayPartitions, dayName, dropDayPartitionsBefore, listPartitionNames, retentionCutoff } from './day-partitions.ts'

const DAY = 86_400_000
const tables = ['history_events', 'history_counts']

describe('day partitions', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.pool)
  })
  afterAll(() => database.drop())

  it('creates the days ahead once, even when several nodes ask at the same time', async () => {
    const now = Date.parse('2026-12-01T13:00:00Z')
    const created = await Promise.all([1, 2, 3].map(() => createDayPartitions(database.pool, tables, { fromMs: now, daysAhead: 2, daysBehind: 8 })))
    expect(created.flat().sort()).toHaveLength(2 * 11)
    const names = await listPartitionNames(database.pool, tables)
    expect(names).toContain('history_events_p20261201')
    expect(names).toContain('history_counts_p20261203')
    expect(names).toContain('history_events_p20261123')
    await database.pool.query(`INSERT INTO history_events (at, node_id, region, entity, kind) VALUES ('2026-12-01T23:59:59.999Z', 'n', 'r', 'e', 'k'), ('2026-12-02T00:00:00Z', 'n', 'r', 'e', 'k')`)
    const placed = await database.pool.query<{ partition: string }>(`SELECT tableoid::regclass::text AS partition FROM history_events ORDER BY at`)
    expect(placed.rows.map((row) => row.partition)).toEqual(['history_events_p20261201', 'history_events_p20261202'])
    expect(await createDayPartitions(database.pool, tables, { fromMs: now })).toEqual([])
  })

  it('drops whole days past retention and keeps the window', async () => {
    const now = Date.parse('2026-12-01T13:00:00Z')
    const cutoff = retentionCutoff(now, 7)
    expect(dayName(cutoff)).toBe('20261124')
    const dropped = await dropDayPartitionsBefore(database.pool, tables, cutoff)
    expect(dropped.sort()).toEqual(['history_counts_p20261123', 'history_events_p20261123'])
    const names = await listPartitionNames(database.pool, tables)
    expect(names).toContain('history_events_p20261124')
    expect(names.some((name) => name.endsWith('20261123'))).toBe(false)
    expect(await dropDayPartitionsBefore(database.pool, tables, cutoff)).toEqual([])
    expect(retentionCutoff(now, 1)).toBe(now - DAY)
  })
})
