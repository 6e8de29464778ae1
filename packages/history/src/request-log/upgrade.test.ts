import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { migrate, migrations } from '@switchboard/store'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import { anyRecord } from '../../test/any-record.ts'
import { createDayPartitions } from '../partitions/day-partitions.ts'
import { newRequestId } from './id.ts'
import { parseLogQuery, searchLogs } from './query.ts'
import type { RequestRecord } from './record.ts'
import { createRequestLog } from './request-log.ts'

const MINUTE = 60_000

describe('the request log across migration 0023', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
  })
  afterAll(async () => {
    await database.drop()
  })

  it("counts the rows a node wrote before it (from rows) and after it (from the narrow counts), and leaves 0022's table to nodes still writing it", async () => {
    const { pool } = database
    // A database as stop 32's nodes left it: migrated through 0022, today's partitions of the log and of its wide counts.
    await migrate(pool, migrations.filter((migration) => migration.version <= '0022'))
    const now = Date.now()
    await createDayPartitions(pool, ['request_log', 'request_log_minutes'], { fromMs: now, daysAhead: 1, daysBehind: 1 })
    const records = fc.sample(anyRecord, { numRuns: 60, seed: 23 })
    const stamped = (record: RequestRecord, at: number, node: string): RequestRecord => ({ ...record, id: newRequestId(at), at: new Date(at).toISOString(), node_id: node })
    const before = records.slice(0, 20).map((record, index) => stamped(record, now - 20 * MINUTE + index * 1000, 'node-old'))
    const old = createRequestLog({ pool, now: () => now, isLeader: () => false }, { countMinutes: false })
    for (const record of before) old.listener(record)
    await old.close()
    expect(old.stats().written).toBe(before.length)

    // 0023 first; later migrations (0024: the timeline's failure counts) touch no table of the log.
    expect((await migrate(pool)).applied[0]).toBe('0023')
    const { rows: since } = await pool.query<{ since: Date }>('SELECT since FROM request_log_counts_since')
    expect(since[0]!.since.getTime()).toBeGreaterThan(before.at(-1) === undefined ? 0 : Date.parse(before.at(-1)!.at))

    // The new code on the same day: its partitions were made by the migration, its rows come with counts.
    const after = records.slice(20).map((record, index) => stamped(record, since[0]!.since.getTime() + MINUTE + index * 1000, 'node-new'))
    const upgraded = createRequestLog({ pool, now: () => now, isLeader: () => false })
    await upgraded.start()
    for (const record of after) upgraded.listener(record)
    await upgraded.close()
    expect(upgraded.stats().written).toBe(after.length)
    const { rows: counted } = await pool.query<{ requests: string }>('SELECT sum(requests) AS requests FROM request_log_counts WHERE span = 60')
    expect(Number(counted[0]?.requests)).toBe(after.length)

    const window = { from: new Date(now - 60 * MINUTE).toISOString(), to: new Date(since[0]!.since.getTime() + 10 * MINUTE).toISOString() }
    const page = await searchLogs(pool, parseLogQuery(window, now))
    expect(page.total).toBe(before.length + after.length)
    expect(page.facets.nodes).toEqual({ 'node-old': before.length, 'node-new': after.length })
    expect((await searchLogs(pool, parseLogQuery({ ...window, nodes: 'node-new' }, now))).total).toBe(after.length)

    // A node still on stop 32's code keeps writing its wide counts.
    await pool.query(
      `INSERT INTO request_log_minutes (span, at, node_id, served_provider, model, status, failure_class, picked_by, moved_off, is_check, added_fallback_served, key_ids, combination, requests)
       VALUES (60, $1, 'node-old', 'openai', 'gpt-4o', 200, NULL, 'routing', false, false, false, '{}', 'a combination', 1)`,
      [new Date(now).toISOString()],
    )
  })
})
