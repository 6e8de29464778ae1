import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import { migrate } from '@switchboard/store'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import { newRequestId } from './id.ts'
import { dayName } from '../partitions/day-partitions.ts'
import { historyLink, parseLogQuery, readLog, searchLogs } from './query.ts'
import { HistoryQueryError } from '../queries/params.ts'
import type { RequestRecord } from './record.ts'
import type { FailureClass } from '@switchboard/routing'
import { createRequestLog, PARTITION_STORAGE, type RequestLog } from './request-log.ts'
import { anyRecord } from '../../test/any-record.ts'

const NOW = Date.parse('2026-12-01T13:00:00Z')

function record(at: number, changes: Partial<Omit<RequestRecord, 'routing'>> & { routing?: Partial<RequestRecord['routing']> } = {}): RequestRecord {
  const { routing, ...rest } = changes
  return {
    id: newRequestId(at),
    at: new Date(at).toISOString(),
    node_id: 'node-1',
    region: 'eu',
    surface: 'chat_completions',
    gateway_key: null,
    requested: { provider: null, model: 'gpt-4o', fallbacks: [], session_id: null },
    served: { provider: 'openai', model: 'gpt-4o', key_id: 'oa-1', key_name: 'prod-1' },
    status: 200,
    failure_class: null,
    message: null,
    latency_ms: 100,
    ttft_ms: null,
    usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 },
    stream: false,
    attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'oa-1', key_name: 'prod-1', status: 200, failure_class: null, latency_ms: 90, wait_hint_ms: null }],
    routing: { picked_by: 'routing', moved_off: null, skipped_keys: [], check: null, added_fallback_served: false, session_kept: null, pinned_kept_failed: false, log: [], ...routing },
    content: null,
    ...rest,
  }
}

describe('the request log in Postgres', () => {
  let database: TestDatabase
  let requestLog: RequestLog
  const moved = record(NOW - 60_000, {
    node_id: 'node-2',
    requested: { provider: 'openai', model: 'gpt-4o', fallbacks: [], session_id: 'sess-42' },
    served: { provider: 'azure', model: 'gpt-4o', key_id: 'az-2', key_name: 'eu-key-2' },
    latency_ms: 900,
    usage: { prompt_tokens: 100, completion_tokens: 400, total_tokens: 500 },
    attempts: [{ provider: 'azure', model: 'gpt-4o', key_id: 'az-2', key_name: 'eu-key-2', status: 200, failure_class: null, latency_ms: 880, wait_hint_ms: null }],
    routing: { moved_off: { provider: 'openai', reason: 'failed' }, skipped_keys: [{ provider: 'azure', model: 'gpt-4o', key_id: 'az-1', key_name: 'eu-key-1', reason: 'rate_limit' }], log: ['[loadbalancing] Skipping 1 of 2 keys'] },
  })
  const check = record(NOW - 50_000, {
    served: { provider: 'openai', model: 'gpt-4o', key_id: 'oa-2', key_name: 'prod-2' },
    attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'oa-2', key_name: 'prod-2', status: 200, failure_class: null, latency_ms: 50, wait_hint_ms: null }],
    routing: { check: { key_id: 'oa-2', key_name: 'prod-2', provider: 'openai', model: 'gpt-4o', outcome: 'served' } },
  })
  const failed = record(NOW - 40_000, {
    requested: { provider: 'anthropic', model: 'claude-sonnet-4-5', fallbacks: ['openai/gpt-4o'], session_id: null },
    served: { provider: 'anthropic', model: 'claude-sonnet-4-5', key_id: 'an-1', key_name: 'main' },
    status: 429,
    failure_class: 'rate_limit',
    message: 'anthropic/claude-sonnet-4-5 is rate limiting every key tried (1 attempt).',
    usage: null,
    latency_ms: 20,
    attempts: [{ provider: 'anthropic', model: 'claude-sonnet-4-5', key_id: 'an-1', key_name: 'main', status: 429, failure_class: 'rate_limit', latency_ms: 15, wait_hint_ms: 1000 }],
    routing: { picked_by: 'caller' },
  })
  const fallback = record(NOW - 30_000, { served: { provider: 'azure', model: 'gpt-4o', key_id: 'az-1', key_name: 'eu-key-1' }, routing: { added_fallback_served: true }, stream: true, ttft_ms: 40 })
  const old = record(NOW - 3 * 86_400_000)

  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.pool)
    requestLog = createRequestLog({ pool: database.pool, now: () => NOW, isLeader: () => true}, { flushIntervalMs: 10, retentionDays: 7 })
    await requestLog.start()
    for (const entry of [moved, check, failed, fallback]) requestLog.listener(entry)
    // A day outside today's partitions: made on demand for this test, as a node three days ago would have.
    const earlier = createRequestLog({ pool: database.pool, now: () => NOW - 3 * 86_400_000, isLeader: () => false }, { flushIntervalMs: 10 })
    await earlier.start()
    earlier.listener(old)
    await Promise.all([requestLog.flush(), earlier.close()])
  })
  afterAll(async () => {
    await requestLog.close()
    await database.drop()
  })

  const search = (params: Record<string, string>) => searchLogs(database.pool, parseLogQuery(params, NOW))
  const ids = async (params: Record<string, string>) => (await search(params)).logs.map((entry) => entry.id)

  it('writes every record and reads it back whole, newest first, with total and facets of the window', async () => {
    expect(requestLog.stats()).toMatchObject({ written: 4, dropped: { overflow: 0, refused: 0, timed_out: 0, closed: 0 } })
    const page = await search({})
    expect(page.total).toBe(4)
    expect(page.logs.map((entry) => entry.id)).toEqual([fallback.id, failed.id, check.id, moved.id])
    expect(page.logs[3]).toEqual(moved)
    expect(page.facets.providers).toEqual({ openai: 1, azure: 2, anthropic: 1 })
    expect(page.facets.status).toEqual({ '200': 3, '429': 1 })
    expect(page.facets.failure_classes).toEqual({ none: 3, rate_limit: 1 })
    expect(page.facets.moved_off).toEqual({ true: 1, false: 3 })
    expect(page.facets.check).toEqual({ true: 1, false: 3 })
    expect(page.facets.key_ids).toEqual({ 'az-2': 1, 'oa-2': 1, 'an-1': 1, 'az-1': 1, 'oa-1': 1 })
    expect(page.facets.nodes).toEqual({ 'node-1': 3, 'node-2': 1 })
    expect(page.key_names['az-2']).toBe('eu-key-2')
  })

  it('filters by every parameter', async () => {
    expect(await ids({ moved_off: 'true' })).toEqual([moved.id])
    expect(await ids({ check: 'true' })).toEqual([check.id])
    expect(await ids({ check: 'false', moved_off: 'false' })).toEqual([fallback.id, failed.id])
    expect(await ids({ added_fallback: 'true' })).toEqual([fallback.id])
    expect(await ids({ picked_by: 'caller' })).toEqual([failed.id])
    expect(await ids({ providers: 'azure' })).toEqual([fallback.id, moved.id])
    expect(await ids({ providers: 'anthropic,openai' })).toEqual([failed.id, check.id])
    expect(await ids({ models: 'claude-sonnet-4-5' })).toEqual([failed.id])
    expect(await ids({ status: '429' })).toEqual([failed.id])
    expect(await ids({ status: '4xx,5xx' })).toEqual([failed.id])
    expect(await ids({ status: '2xx' })).toHaveLength(3)
    expect(await ids({ failure_classes: 'rate_limit' })).toEqual([failed.id])
    expect(await ids({ failure_classes: 'none' })).toHaveLength(3)
    expect(await ids({ key_ids: 'az-1' })).toEqual([fallback.id])
    expect(await ids({ key_ids: 'an-1,oa-2' })).toEqual([failed.id, check.id])
    expect(await ids({ session_id: 'sess-42' })).toEqual([moved.id])
    expect(await ids({ request_id: check.id })).toEqual([check.id])
    expect(await ids({ nodes: 'node-2' })).toEqual([moved.id])
    expect(await ids({ min_latency_ms: '500' })).toEqual([moved.id])
    expect(await ids({ max_latency_ms: '50' })).toEqual([failed.id])
    expect(await ids({ min_tokens: '100', max_tokens: '1000' })).toEqual([moved.id])
    expect(await ids({ search: 'EU-KEY-2' })).toEqual([moved.id])
    expect(await ids({ search: 'rate limiting' })).toEqual([failed.id])
    expect(await ids({ search: '100%' })).toEqual([])
    // matched in the columns themselves (rows.ts keeps lowercase ids and names out of `search`)
    expect(await ids({ search: check.id.toUpperCase() })).toEqual([check.id])
    expect(await ids({ search: 'SESS-42' })).toEqual([moved.id])
    expect(await ids({ search: 'Claude-Sonnet' })).toEqual([failed.id])
    expect(await ids({ search: 'AZ-1' })).toEqual([fallback.id])
    expect(await ids({ from: String((NOW - 45_000) / 1000) })).toEqual([fallback.id, failed.id])
    expect(await ids({ from: new Date(NOW - 4 * 86_400_000).toISOString(), to: new Date(NOW - 2 * 86_400_000).toISOString() })).toEqual([old.id])
  })

  it('finds a request by every key it tried, the one that served it and the one that failed first', async () => {
    const retried = record(NOW - 20_000, {
      served: { provider: 'openai', model: 'gpt-4o', key_id: 'oa-4', key_name: 'second' },
      attempts: [
        { provider: 'openai', model: 'gpt-4o', key_id: 'oa-3', key_name: 'First-Try', status: 500, failure_class: 'transient', latency_ms: 5, wait_hint_ms: null },
        { provider: 'openai', model: 'gpt-4o', key_id: 'oa-4', key_name: 'second', status: 200, failure_class: null, latency_ms: 9, wait_hint_ms: null },
      ],
    })
    requestLog.listener(retried)
    await requestLog.flush()
    try {
      expect(await ids({ key_ids: 'oa-3' })).toEqual([retried.id])
      expect(await ids({ key_ids: 'oa-4' })).toEqual([retried.id])
      expect(await ids({ search: 'first-try' })).toEqual([retried.id])
      expect((await search({})).facets.key_ids).toMatchObject({ 'oa-3': 1, 'oa-4': 1, 'az-1': 1 })
    } finally {
      await database.pool.query('DELETE FROM request_log WHERE id = $1', [retried.id])
    }
  })

  it('makes partitions that take no vacuum for inserts', async () => {
    const options = async () => {
      const result = await database.pool.query<{ options: string[] | null }>(
        "SELECT c.reloptions AS options FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'request_log'::regclass",
      )
      return result.rows.map((row) => row.options)
    }
    const made = await options()
    expect(made.length).toBeGreaterThan(3)
    for (const option of made) expect(option).toContain(PARTITION_STORAGE.replaceAll(' ', ''))
  })

  it('summarizes its BRIN ranges up to the newest rows, so no query reads pages no summary covers', async () => {
    const unsummarized = async () => {
      const { rows } = await database.pool.query<{ ranges: number }>(
        `SELECT coalesce(sum(brin_summarize_new_values(i.indexrelid::regclass)), 0)::int AS ranges FROM pg_inherits h JOIN pg_index i ON i.indrelid = h.inhrelid
          WHERE h.inhparent = 'request_log'::regclass AND h.inhrelid::regclass::text = $1`,
        [`request_log_p${dayName(NOW)}`],
      )
      return rows[0]?.ranges
    }
    // More than one range's pages (128): the first range is summarized from the start.
    const from = NOW - 9_000
    for (let index = 0; index < 5_000; index++) requestLog.listener(record(from + index))
    await requestLog.flush()
    try {
      expect(await requestLog.summarize()).toBeGreaterThanOrEqual(1)
      expect(await unsummarized()).toBe(0)
      expect(await requestLog.summarize()).toBe(0)
    } finally {
      await database.pool.query('DELETE FROM request_log WHERE at >= $1 AND at < $2', [new Date(from).toISOString(), new Date(from + 5_000).toISOString()])
    }
  })

  it('sorts and pages', async () => {
    expect(await ids({ sort: 'oldest' })).toEqual([moved.id, check.id, failed.id, fallback.id])
    expect((await ids({ sort: 'slowest' }))[0]).toBe(moved.id)
    expect((await ids({ sort: 'fastest' }))[0]).toBe(failed.id)
    expect((await ids({ sort: 'most_tokens' }))[0]).toBe(moved.id)
    const page = await search({ limit: '2', offset: '1' })
    expect(page.logs.map((entry) => entry.id)).toEqual([failed.id, check.id])
    expect(page).toMatchObject({ total: 4, limit: 2, offset: 1 })
  })

  it('counts whole minutes from the per-minute counts and the rest from rows, both as the rows themselves say', async () => {
    // Two days back, in partitions the `earlier` log made: rows no other test deletes under.
    const base = NOW - 2 * 86_400_000 - 5 * 3_600_000 + 17_345
    const span = 3 * 3_600_000
    const variants = fc.record({
      offset: fc.integer({ min: 0, max: span - 1 }),
      node_id: fc.constantFrom('node-1', 'node-2', 'Node-3', "no'de\\4"),
      served: fc.constantFrom<RequestRecord['served']>(
        { provider: 'openai', model: 'gpt-4o', key_id: 'oa-1', key_name: 'prod-1' },
        // Values with a quote, backslashes, an escape that would end a literal, a long name: counted as the rows hold them.
        { provider: "o'reilly\\", model: "gpt\\'); DROP TABLE request_log; --", key_id: "k\\'1", key_name: 'odd' },
        { provider: 'openai', model: `long-${'x'.repeat(3_000)}`, key_id: 'oa-1', key_name: 'prod-1' },
        { provider: 'azure', model: 'gpt-4o', key_id: 'az-1', key_name: 'eu-1' },
        { provider: 'anthropic', model: 'claude-sonnet-4-5', key_id: 'an-1', key_name: 'main' },
        { provider: null, model: null, key_id: null, key_name: null },
      ),
      failure: fc.constantFrom<[number, FailureClass | null]>([200, null], [429, 'rate_limit'], [502, 'transient'], [400, 'caller_fault'], [499, 'cancelled']),
      retried: fc.boolean(),
      picked_by: fc.constantFrom<'routing' | 'caller'>('routing', 'caller'),
      moved: fc.boolean(),
      check: fc.boolean(),
      added: fc.boolean(),
    })
    const records = fc.sample(variants, { numRuns: 600, seed: 15 }).map((variant) => {
      const attempts: RequestRecord['attempts'] = []
      if (variant.retried) attempts.push({ provider: 'openai', model: 'gpt-4o', key_id: 'oa-9', key_name: 'spare', status: 429, failure_class: 'rate_limit', latency_ms: 3, wait_hint_ms: null })
      if (variant.served.key_id !== null) attempts.push({ provider: variant.served.provider ?? '', model: variant.served.model ?? '', key_id: variant.served.key_id, key_name: variant.served.key_name ?? '', status: 200, failure_class: null, latency_ms: 5, wait_hint_ms: null })
      return record(base + variant.offset, {
        node_id: variant.node_id,
        requested: { provider: null, model: 'gpt-4o', fallbacks: [], session_id: null },
        served: variant.served,
        status: variant.failure[0],
        failure_class: variant.failure[1],
        attempts,
        routing: {
          picked_by: variant.picked_by,
          moved_off: variant.moved ? { provider: 'openai', reason: 'failed' } : null,
          check: variant.check ? { key_id: 'oa-9', key_name: 'spare', provider: 'openai', model: 'gpt-4o', outcome: 'served' } : null,
          added_fallback_served: variant.added,
        },
      })
    })
    for (const entry of records) requestLog.listener(entry)
    await requestLog.flush()
    const { rows: written } = await database.pool.query<{ requests: string }>('SELECT sum(requests) AS requests FROM request_log_counts WHERE span = 60 AND at >= $1 AND at < $2', [
      new Date(base - 60_000).toISOString(),
      new Date(base + span).toISOString(),
    ])
    expect(Number(written[0]?.requests)).toBe(records.length)

    // What the rows themselves say: the facets of the window and the total of each filter.
    const keysOf = (entry: RequestRecord) => [...new Set([...(entry.served.key_id === null ? [] : [entry.served.key_id]), ...entry.attempts.map((attempt) => attempt.key_id)])]
    const filters: [Record<string, string>, (entry: RequestRecord) => boolean][] = [
      [{}, () => true],
      [{ providers: 'azure,anthropic' }, (entry) => entry.served.provider === 'azure' || entry.served.provider === 'anthropic'],
      [{ models: 'gpt-4o' }, (entry) => (entry.served.model ?? entry.requested.model) === 'gpt-4o'],
      [{ status: '429,5xx' }, (entry) => entry.status === 429 || Math.trunc(entry.status / 100) === 5],
      [{ failure_classes: 'none,cancelled' }, (entry) => entry.failure_class === null || entry.failure_class === 'cancelled'],
      [{ key_ids: 'oa-9' }, (entry) => keysOf(entry).includes('oa-9')],
      [{ nodes: 'Node-3' }, (entry) => entry.node_id === 'Node-3'],
      [{ moved_off: 'true', check: 'false' }, (entry) => entry.routing.moved_off !== null && entry.routing.check === null],
      [{ added_fallback: 'true', picked_by: 'caller' }, (entry) => entry.routing.added_fallback_served && entry.routing.picked_by === 'caller'],
      [{ min_latency_ms: '0', providers: 'openai' }, (entry) => entry.served.provider === 'openai'],
    ]
    const facetsOf = (entries: RequestRecord[]) => {
      const facets: Record<string, Record<string, number>> = { providers: {}, models: {}, status: {}, failure_classes: {}, key_ids: {}, nodes: {}, picked_by: {}, moved_off: {}, check: {}, added_fallback: {} }
      const add = (facet: string, value: string) => (facets[facet]![value] = (facets[facet]![value] ?? 0) + 1)
      for (const entry of entries) {
        if (entry.served.provider !== null) add('providers', entry.served.provider)
        add('models', entry.served.model ?? entry.requested.model)
        add('status', String(entry.status))
        add('failure_classes', entry.failure_class ?? 'none')
        for (const key of keysOf(entry)) add('key_ids', key)
        add('nodes', entry.node_id)
        add('picked_by', entry.routing.picked_by)
        add('moved_off', String(entry.routing.moved_off !== null))
        add('check', String(entry.routing.check !== null))
        add('added_fallback', String(entry.routing.added_fallback_served))
      }
      return facets
    }
    const newest = (a: RequestRecord, b: RequestRecord) => Date.parse(b.at) - Date.parse(a.at) || (b.id < a.id ? -1 : b.id > a.id ? 1 : 0)
    // Windows on and off the minute, inside the rows and around them.
    const minute = Math.ceil(base / 60_000) * 60_000
    const hour = Math.ceil(base / 3_600_000) * 3_600_000
    const windows = [
      [base - 60_000, base + span],
      [minute, minute + 5 * 60_000],
      [minute - 1, minute + 5 * 60_000 + 1],
      [hour, hour + 3_600_000],
      [hour - 60_001, hour + 2 * 3_600_000 + 1],
      [base + 12_345, base + span - 54_321],
      [minute + 10_000, minute + 50_000],
    ] as const
    const answersAsRows = async (kept: RequestRecord[]) => {
      for (const [from, to] of windows) {
        const inWindow = kept.filter((entry) => Date.parse(entry.at) >= from && Date.parse(entry.at) <= to)
        const window = { from: new Date(from).toISOString(), to: new Date(to).toISOString() }
        for (const [params, matches] of filters) {
          const page = await search({ ...window, ...params, limit: '7', offset: '3' })
          const expected = inWindow.filter(matches).sort(newest)
          expect({ window, params, total: page.total }).toEqual({ window, params, total: expected.length })
          expect(page.logs.map((entry) => entry.id)).toEqual(expected.slice(3, 10).map((entry) => entry.id))
          expect(page.facets).toEqual(facetsOf(inWindow))
        }
        const oldest = await search({ ...window, sort: 'oldest', limit: '5' })
        expect(oldest.logs.map((entry) => entry.id)).toEqual(inWindow.sort(newest).reverse().slice(0, 5).map((entry) => entry.id))
      }
    }
    try {
      await answersAsRows(records)
      // Rows deleted (a third, one by one as an operator might): taken off both counts, each facet value with them.
      const deleted = records.filter((_, index) => index % 3 === 0 || records[index]!.served.provider === 'anthropic')
      await database.pool.query('DELETE FROM request_log WHERE id = ANY($1::uuid[])', [deleted.map((entry) => entry.id)])
      await answersAsRows(records.filter((entry) => !deleted.includes(entry)))
    } finally {
      for (const table of ['request_log', 'request_log_counts', 'request_log_facet_counts']) {
        await database.pool.query(`DELETE FROM ${table} WHERE at >= $1 AND at < $2`, [new Date(base - 3_600_000).toISOString(), new Date(base + span + 3_600_000).toISOString()])
      }
    }
  })

  it('answers a bad parameter with an error naming it', () => {
    const bad: [Record<string, string>, string][] = [
      [{ from: 'yesterday' }, 'from'],
      [{ to: '2026-13-45' }, 'to'],
      [{ from: String(NOW / 1000), to: String(NOW / 1000 - 60) }, 'from'],
      [{ status: 'ok' }, 'status'],
      [{ status: '' }, 'status'],
      [{ failure_classes: 'exploded' }, 'failure_classes'],
      [{ request_id: 'abc' }, 'request_id'],
      [{ moved_off: 'yes' }, 'moved_off'],
      [{ check: '1' }, 'check'],
      [{ added_fallback: 'maybe' }, 'added_fallback'],
      [{ picked_by: 'pin' }, 'picked_by'],
      [{ min_latency_ms: '-1' }, 'min_latency_ms'],
      [{ max_latency_ms: 'fast' }, 'max_latency_ms'],
      [{ min_latency_ms: '10', max_latency_ms: '5' }, 'min_latency_ms'],
      [{ min_tokens: '1.5' }, 'min_tokens'],
      [{ min_tokens: '10', max_tokens: '5' }, 'min_tokens'],
      [{ max_tokens: '-3' }, 'max_tokens'],
      [{ sort: 'priority' }, 'sort'],
      [{ limit: '0' }, 'limit'],
      [{ limit: '501' }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ offset: '-1' }, 'offset'],
      [{ provider: 'openai' }, 'provider'],
    ]
    for (const [params, param] of bad) {
      let thrown: unknown
      try {
        parseLogQuery(params, NOW)
      } catch (error) {
        thrown = error
      }
      expect(thrown, JSON.stringify(params)).toBeInstanceOf(HistoryQueryError)
      expect((thrown as HistoryQueryError).param).toBe(param)
    }
  })

  it('reads one request by its id, with its moment in routing history', async () => {
    const entry = await readLog(database.pool, moved.id.toUpperCase())
    expect(entry).toEqual(moved)
    expect(await readLog(database.pool, newRequestId(NOW))).toBeNull()
    await expect(readLog(database.pool, 'nope')).rejects.toBeInstanceOf(HistoryQueryError)
    const link = historyLink(moved)
    expect(link.entities).toEqual(['route:azure:gpt-4o:az-2', 'direction:azure:gpt-4o', 'direction:openai:gpt-4o', 'route:azure:gpt-4o:az-1'])
    expect(link.from).toBe(new Date(NOW - 60_000 - 300_000).toISOString())
    expect(link.issues).toContain('/api/adaptive-routing/history/issues?from=')
  })

  it('keeps every awkward character of a record through COPY: tabs, newlines, backslashes, quotes, braces, commas, emoji', async () => {
    const awkward = record(NOW - 20_000, {
      gateway_key: 'team\tone',
      requested: { provider: null, model: 'gpt-4o', fallbacks: ['a\\b'], session_id: 'sess\nwith\r\nbreaks\\' },
      served: { provider: 'openai', model: 'gpt-4o', key_id: 'oa-"q"', key_name: 'name, with {braces} and \\ and "quotes"' },
      status: 502,
      failure_class: 'unknown',
      message: 'upstream said:\t"bad\\gateway"\nline two 🚧 Überlastung',
      attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'oa-"q"', key_name: 'name, with {braces} and \\ and "quotes"', status: 502, failure_class: 'unknown', latency_ms: 5, wait_hint_ms: null }],
      routing: { log: ['tab\there', 'back\\slash \\N not null'] },
    })
    requestLog.listener(awkward)
    await requestLog.flush()
    expect(requestLog.stats().dropped).toEqual({ overflow: 0, refused: 0, timed_out: 0, closed: 0 })
    expect(await readLog(database.pool, awkward.id)).toEqual(awkward)
    const found = await search({ key_ids: 'oa-"q"', search: 'überlastung' })
    expect(found.logs.map((entry) => entry.id)).toEqual([awkward.id])
    await database.pool.query('DELETE FROM request_log WHERE id = $1', [awkward.id])
  })

  it('writes a record nobody flushes: it waits to be encoded with the others of its turn of the event loop, and is counted as buffered meanwhile', async () => {
    const lone = record(NOW - 10_000)
    const written = requestLog.stats().written
    requestLog.listener(lone)
    expect(requestLog.stats().buffered).toBe(1)
    await vi.waitFor(() => expect(requestLog.stats().written).toBe(written + 1), { timeout: 5_000, interval: 10 })
    expect(requestLog.stats().buffered).toBe(0)
    expect(await readLog(database.pool, lone.id)).toEqual(lone)
    await database.pool.query('DELETE FROM request_log WHERE id = $1', [lone.id])
  })

  it('writes a row whose caller sent NUL characters (which Postgres text cannot hold) as U+FFFD, and the rest of its batch with it', async () => {
    const nul = record(NOW - 15_000, { requested: { provider: null, model: 'gpt\u00004o', fallbacks: ['x\u0000y'], session_id: 'sess\u0000' }, message: 'bad\u0000model' })
    const neighbour = record(NOW - 14_000)
    requestLog.listener(nul)
    requestLog.listener(neighbour)
    await requestLog.flush()
    expect(requestLog.stats().dropped).toEqual({ overflow: 0, refused: 0, timed_out: 0, closed: 0 })
    // Columns hold U+FFFD; the detail is JSON, where NUL is an escape like any other.
    expect(await readLog(database.pool, nul.id)).toEqual({ ...nul, requested: { ...nul.requested, model: 'gpt\uFFFD4o', session_id: 'sess\uFFFD' } })
    expect(await readLog(database.pool, neighbour.id)).toEqual(neighbour)
    await database.pool.query('DELETE FROM request_log WHERE id = ANY($1::uuid[])', [[nul.id, neighbour.id]])
  })

  it('reads back any record through Postgres as it was written (text as Postgres keeps it: NUL and lone surrogates as U+FFFD)', async () => {
    // Today's times and their ids: the rows land in today's partition, and a lookup by id finds them.
    const records = fc.sample(anyRecord, { numRuns: 120, seed: 15 }).map((entry, index) => {
      const at = NOW - 9_000 + index
      return { ...entry, at: new Date(at).toISOString(), id: newRequestId(at) }
    })
    for (const entry of records) requestLog.listener(entry)
    await requestLog.flush()
    expect(requestLog.stats().dropped).toEqual({ overflow: 0, refused: 0, timed_out: 0, closed: 0 })
    const stored = (value: string | null) => (value === null ? null : Buffer.from(value.replaceAll('\0', '\uFFFD'), 'utf8').toString('utf8'))
    for (const entry of records) {
      const { requested, served } = entry
      // The columns hold text as Postgres keeps it; the rest is JSON, as JSON.stringify made it.
      const expected = JSON.parse(JSON.stringify({
        ...entry,
        node_id: stored(entry.node_id), region: stored(entry.region), surface: stored(entry.surface), gateway_key: stored(entry.gateway_key), failure_class: stored(entry.failure_class),
        requested: { ...requested, provider: stored(requested.provider), model: stored(requested.model), session_id: stored(requested.session_id) },
        served: { provider: stored(served.provider), model: stored(served.model), key_id: stored(served.key_id), key_name: stored(served.key_name) },
      }))
      expect(JSON.parse(JSON.stringify(await readLog(database.pool, entry.id)))).toEqual(expected)
    }
    await database.pool.query('DELETE FROM request_log WHERE id = ANY($1::uuid[])', [records.map((entry) => entry.id)])
  })

  it('reads a row written before `detail` existed (the whole record as JSON in entry, no detail) as it was', async () => {
    const before = record(NOW - 10_000, { served: { provider: 'openai', model: 'gpt-4o', key_id: 'oa-3', key_name: 'prod-3' } })
    await database.pool.query(
      `INSERT INTO request_log (at, id, node_id, region, surface, requested_model, key_ids, status, latency_ms, stream, picked_by, moved_off, is_check, added_fallback_served, search, entry)
       VALUES ($1, $2, 'node-1', 'eu', 'chat_completions', 'gpt-4o', '{oa-3}', 200, 100, false, 'routing', false, false, false, '', $3)`,
      [before.at, before.id, JSON.stringify(before)],
    )
    expect(await readLog(database.pool, before.id)).toEqual(before)
    expect((await search({ key_ids: 'oa-3' })).logs).toEqual([before])
    await database.pool.query('DELETE FROM request_log WHERE id = $1', [before.id])
  })

  it('drops the days past retention', async () => {
    const sameDay = createRequestLog({ pool: database.pool, now: () => NOW, isLeader: () => true }, { retentionDays: 7 })
    expect(await sameDay.applyRetention()).toEqual([])
    const later = createRequestLog({ pool: database.pool, now: () => NOW + 5 * 86_400_000, isLeader: () => true }, { retentionDays: 7 })
    expect(await later.applyRetention()).toEqual(['request_log_counts_p20261127', 'request_log_counts_p20261128', 'request_log_facet_counts_p20261127', 'request_log_facet_counts_p20261128', 'request_log_p20261127', 'request_log_p20261128'])
    expect((await search({ from: new Date(NOW - 4 * 86_400_000).toISOString() })).total).toBe(4)
    await Promise.all([sameDay.close(), later.close()])
  })
})
