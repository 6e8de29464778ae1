import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate, createPool } from '@switchboard/store'
import type pg from 'pg'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import { createBatchWriter } from './batch-writer.ts'
import { insertRows, type Column } from './insert.ts'
import { createDayPartitions } from '../partitions/day-partitions.ts'

interface TestRow {
  at: number
  seq: number
}

const columns: Column<TestRow>[] = [
  { name: 'at', type: 'timestamptz', value: (row) => new Date(row.at) },
  { name: 'node_id', type: 'text', value: () => 'node-a' },
  { name: 'region', type: 'text', value: () => 'eu' },
  { name: 'entity', type: 'text', value: (row) => `key:openai:k${row.seq}` },
  { name: 'kind', type: 'text', value: () => 'test' },
  { name: 'detail', type: 'jsonb', value: (row) => ({ seq: row.seq }) },
]

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })

describe('batch writer (no database)', () => {
  it('keeps at most `capacity` rows while writes fail, dropping the oldest, then writes the newest in order', async () => {
    let down = true
    const written: number[] = []
    const writer = createBatchWriter<number>({
      name: 'test',
      capacity: 10,
      batchSize: 4,
      flushIntervalMs: 1,
      retryDelayMs: 1,
      maxRetryDelayMs: 2,
      write: async (rows) => {
        if (down) throw refused()
        written.push(...rows)
      },
    })
    for (let seq = 0; seq < 25; seq++) writer.add(seq)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(writer.stats().buffered).toBe(10)
    expect(writer.stats().dropped.overflow).toBe(15)
    expect(writer.stats().failing).toBe(true)
    down = false
    await writer.flush()
    expect(written).toEqual([15, 16, 17, 18, 19, 20, 21, 22, 23, 24])
    expect(writer.stats()).toMatchObject({ buffered: 0, written: 10, failing: false })
  })

  it('never awaits in add: a hung database costs the caller nothing and the hung batch is counted', async () => {
    const writer = createBatchWriter<number>({ name: 'test', capacity: 100, batchSize: 10, writeTimeoutMs: 30, retryDelayMs: 1, write: () => new Promise<void>(() => {}) })
    const started = process.hrtime.bigint()
    for (let seq = 0; seq < 1000; seq++) writer.add(seq)
    const addMs = Number(process.hrtime.bigint() - started) / 1e6
    expect(addMs).toBeLessThan(1_000) // not a timing threshold on the writer: proof add() does not wait on a write that never ends
    await new Promise((resolve) => setTimeout(resolve, 60))
    const stats = writer.stats()
    expect(stats.dropped.timed_out).toBe(10)
    expect(stats.dropped.overflow + stats.dropped.timed_out + stats.buffered).toBe(1000)
    await writer.close({ timeoutMs: 10 })
  })

  it('drops a batch the database refuses again and again, and goes on with the next', async () => {
    const written: number[] = []
    const writer = createBatchWriter<number>({
      name: 'test',
      batchSize: 2,
      retryDelayMs: 1,
      maxRefusals: 2,
      flushIntervalMs: 1,
      write: async (rows) => {
        if (rows.includes(0)) throw Object.assign(new Error('value too long'), { code: '22001' })
        written.push(...rows)
      },
    })
    for (let seq = 0; seq < 4; seq++) writer.add(seq)
    for (let round = 0; round < 20 && writer.stats().buffered > 0; round++) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(written).toEqual([2, 3])
    expect(writer.stats().dropped.refused).toBe(2)
  })

  it('counts every row exactly once when it leaves for good: written, pushed out, pushed out while in flight, refused, hung, closed', async () => {
    const ledger = (stats: ReturnType<typeof writer.stats>) => stats.written + stats.dropped.overflow + stats.dropped.refused + stats.dropped.timed_out + stats.dropped.closed
    let mode: 'down' | 'up' | 'refuse' | 'hang' = 'down'
    let gate: (() => void) | undefined
    const writer = createBatchWriter<number>({
      name: 'test',
      capacity: 6,
      batchSize: 3,
      flushIntervalMs: 1,
      retryDelayMs: 1,
      maxRetryDelayMs: 2,
      maxRefusals: 1,
      writeTimeoutMs: 20,
      write: async (rows) => {
        if (mode === 'down') {
          // a write in flight while newer rows push its oldest out, then it fails
          await new Promise<void>((resolve) => (gate = resolve))
          throw refused()
        }
        if (mode === 'refuse' && rows.includes(100)) throw Object.assign(new Error('value too long'), { code: '22001' })
        if (mode === 'hang' && rows.includes(200)) return new Promise<void>(() => {})
      },
    })
    let seq = 0
    const settle = async (until: () => boolean) => {
      for (let round = 0; round < 400 && !until(); round++) await new Promise((resolve) => setTimeout(resolve, 5))
    }
    for (; seq < 3; seq++) writer.add(seq) // a full batch: in flight, held at the gate
    await settle(() => gate !== undefined)
    for (; seq < 12; seq++) writer.add(seq) // pushes the in-flight rows and then buffered ones out
    gate?.()
    mode = 'up'
    await writer.flush()
    mode = 'refuse'
    for (const row of [100, 101, 102]) writer.add(row)
    await writer.flush()
    mode = 'hang'
    for (const row of [200, 201, 202]) writer.add(row)
    await settle(() => writer.stats().dropped.timed_out === 3)
    mode = 'up'
    for (const row of [300, 301]) writer.add(row)
    await writer.close({ timeoutMs: 50 })
    writer.add(400)
    const stats = writer.stats()
    expect(stats.dropped.overflow).toBeGreaterThan(0)
    expect(stats.dropped.refused).toBe(3)
    expect(stats.dropped.timed_out).toBe(3)
    expect(stats.dropped.closed).toBeGreaterThan(0)
    // 12 rows, then 100-102, 200-202, 300-301 and 400
    expect(ledger(stats)).toBe(21)
    expect(stats.buffered).toBe(0)
  })

  it('flushes on close and counts what is added after', async () => {
    const written: number[] = []
    const writer = createBatchWriter<number>({ name: 'test', flushIntervalMs: 60_000, write: async (rows) => void written.push(...rows) })
    writer.add(1)
    writer.add(2)
    await writer.close()
    writer.add(3)
    expect(written).toEqual([1, 2])
    expect(writer.stats().dropped.closed).toBe(1)
  })
})

describe('batch writer against Postgres', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.pool)
    await createDayPartitions(database.pool, ['history_events'], { fromMs: Date.now(), daysBehind: 1 })
  })
  afterAll(() => database.drop())

  it('writes thousands of rows in multi-row batches, rides out an unreachable server with the newest rows kept', async () => {
    const unreachable = createPool({ url: 'postgres://nobody@127.0.0.1:1/none' })
    let pool: pg.Pool = unreachable
    let statements = 0
    const writer = createBatchWriter<TestRow>({
      name: 'events',
      capacity: 3_000,
      batchSize: 1_000,
      flushIntervalMs: 5,
      retryDelayMs: 5,
      maxRetryDelayMs: 20,
      write: async (rows) => {
        statements++
        await insertRows(pool, 'history_events', columns, rows)
      },
    })
    const now = Date.now()
    for (let seq = 0; seq < 5_000; seq++) writer.add({ at: now, seq })
    for (let round = 0; round < 200 && !writer.stats().failing; round++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(writer.stats()).toMatchObject({ failing: true, buffered: 3_000 })
    expect(writer.stats().dropped.overflow).toBe(2_000)
    pool = database.pool
    statements = 0
    await writer.flush()
    const result = await database.pool.query<{ count: string; min: number; max: number }>(`SELECT count(*), min((detail->>'seq')::int), max((detail->>'seq')::int) FROM history_events`)
    expect(result.rows[0]).toEqual({ count: '3000', min: 2_000, max: 4_999 })
    expect(statements).toBe(3)
    expect(writer.stats()).toMatchObject({ written: 3_000, buffered: 0, failing: false })
    await writer.close()
    await unreachable.end()
  })
})
