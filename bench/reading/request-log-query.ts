/**
 * GET /api/logs over a busy day (issue 15): a day of request log rows written through the
 * request log itself (`createRequestLog`: its rows, which the log's trigger counts per minute and
 * per hour as they land, as on a node), then the queries the Requests page and a script send, timed through `searchLogs`
 * (what the API runs), side by side with stop 19's queries (every facet and total counted from
 * the rows, the page sorted over the whole window) on the same rows, in one run.
 *
 *   node --import tsx bench/reading/request-log-query.ts [--rows 2000000] [--iterations 9] [--no-readme]
 *
 * Checks that both answer the same totals and facets (and the same page), and times encoding a
 * row (µs per row, the writer's own loop).
 *
 * `--costs-only` times only the writes with counts and without (the counting trigger disabled;
 * nothing written to the README).
 * `--keep` leaves the database in place (to look into a query). Uses its own embedded PostgreSQL under bench/results/request-log-query/ (or DATABASE_URL).
 */
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type pg from 'pg'
import { createRequestLog, parseLogQuery, searchLogs, type LogQuery, type RequestRecord } from '@switchboard/history'
import { newRequestId } from '../../packages/history/src/request-log/id.ts'
import { rowBytes } from '../../packages/history/src/request-log/rows.ts'
import { createBenchDatabase, dropBenchDatabase, openBenchServer, type BenchServer } from '../lib/database.ts'
import { postgresCpuMs } from '../lib/processes.mjs'
import { seededRandom as prng } from '@switchboard/test-kit'
import { replaceSection } from '../lib/report.mjs'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({ options: { rows: { type: 'string', default: '2000000' }, iterations: { type: 'string', default: '9' }, keep: { type: 'boolean', default: false }, 'no-readme': { type: 'boolean', default: false }, 'costs-only': { type: 'boolean', default: false } } })
const rowCount = Math.min(20_000_000, Math.max(10_000, Number(values.rows)))
const iterations = Math.min(100, Math.max(3, Number(values.iterations)))
const DAY = 86_400_000

const PROVIDERS = [
  { provider: 'openai', models: ['gpt-4o', 'gpt-4o-mini'] },
  { provider: 'azure', models: ['gpt-4o', 'gpt-4o-mini'] },
  { provider: 'anthropic', models: ['claude-sonnet-4-5', 'claude-haiku-4-5'] },
]
const NODES = ['node-1', 'node-2', 'node-3']

/** One request of the day: mostly served first time, some retried on another key, some failed. */
function requestAt(at: number, random: () => number): RequestRecord {
  const { provider, models } = PROVIDERS[Math.floor(random() * PROVIDERS.length)]!
  const model = models[Math.floor(random() * models.length)]!
  const key = Math.floor(random() * 10)
  const keyId = `${provider}-key-${key}`
  const roll = random()
  const failed = roll < 0.03
  const retried = roll >= 0.03 && roll < 0.1
  const attempts: RequestRecord['attempts'] = []
  if (retried) attempts.push({ provider, model, key_id: `${provider}-key-${(key + 1) % 10}`, key_name: `spare-${(key + 1) % 10}`, status: 429, failure_class: 'rate_limit', latency_ms: 12, wait_hint_ms: 1000 })
  attempts.push({ provider, model, key_id: keyId, key_name: `prod-${key}`, status: failed ? 502 : 200, failure_class: failed ? 'transient' : null, latency_ms: 200 + Math.floor(random() * 800), wait_hint_ms: null })
  const pinned = random() < 0.5
  return {
    id: newRequestId(at),
    at: new Date(at).toISOString(),
    node_id: NODES[Math.floor(random() * NODES.length)]!,
    region: 'eu',
    surface: 'chat_completions',
    gateway_key: null,
    requested: { provider: pinned ? provider : null, model, fallbacks: [], session_id: random() < 0.2 ? `session-${Math.floor(random() * 5000)}` : null },
    served: failed ? { provider: null, model: null, key_id: null, key_name: null } : { provider, model, key_id: keyId, key_name: `prod-${key}` },
    status: failed ? 502 : 200,
    failure_class: failed ? 'transient' : null,
    message: failed ? `${provider}/${model} failed on every key tried (1 attempt).` : null,
    latency_ms: 250 + Math.floor(random() * 900),
    ttft_ms: null,
    usage: failed ? null : { prompt_tokens: 100, completion_tokens: 50 + Math.floor(random() * 400), total_tokens: 150 + Math.floor(random() * 400) },
    stream: random() < 0.3,
    attempts,
    routing: {
      picked_by: pinned ? 'caller' : 'routing',
      moved_off: random() < 0.02 ? { provider: 'openai', reason: 'failed' } : null,
      skipped_keys: [],
      check: random() < 0.001 ? { key_id: keyId, key_name: `prod-${key}`, provider, model, outcome: 'served' } : null,
      added_fallback_served: random() < 0.01,
      session_kept: null,
      pinned_kept_failed: false,
      log: [`[loadbalancing] Provider ${provider} for ${model}: the best-scored provider for the model`],
    },
    content: null,
  }
}

/** Stop 19's queries, for the side by side: the page sorted over the whole window, the total and every facet counted from the rows. */
async function stop19(pool: pg.Pool, query: LogQuery): Promise<{ ids: string[]; total: number; facets: Record<string, Record<string, number>> }> {
  const window = [new Date(query.from).toISOString(), new Date(query.to).toISOString()]
  const page = pool.query<{ id: string }>(`SELECT id FROM request_log WHERE at >= $1 AND at <= $2 ORDER BY at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}`, window)
  const total = pool.query<{ total: string }>('SELECT count(*) AS total FROM request_log WHERE at >= $1 AND at <= $2', window)
  const grouped = pool.query<{ facet: string; value: string | null; count: string }>(
    `WITH windowed AS (
       SELECT served_provider, coalesce(served_model, requested_model) AS model, status::text AS status, coalesce(failure_class, 'none') AS failure_class,
              node_id, picked_by, moved_off::text AS moved_off, is_check::text AS is_check, added_fallback_served::text AS added_fallback
         FROM request_log WHERE at >= $1 AND at <= $2)
     SELECT 'providers' AS facet, served_provider AS value, count(*) FROM windowed WHERE served_provider IS NOT NULL GROUP BY 2
     UNION ALL SELECT 'models', model, count(*) FROM windowed GROUP BY 2
     UNION ALL SELECT 'status', status, count(*) FROM windowed GROUP BY 2
     UNION ALL SELECT 'failure_classes', failure_class, count(*) FROM windowed GROUP BY 2
     UNION ALL SELECT 'nodes', node_id, count(*) FROM windowed GROUP BY 2
     UNION ALL SELECT 'picked_by', picked_by, count(*) FROM windowed GROUP BY 2
     UNION ALL SELECT 'moved_off', moved_off, count(*) FROM windowed GROUP BY 2
     UNION ALL SELECT 'check', is_check, count(*) FROM windowed GROUP BY 2
     UNION ALL SELECT 'added_fallback', added_fallback, count(*) FROM windowed GROUP BY 2`,
    window,
  )
  const keys = pool.query<{ value: string; count: string }>(
    'SELECT key_id AS value, count(*) FROM request_log, unnest(coalesce(key_ids, array_remove(ARRAY[served_key_id], NULL))) AS key_id WHERE at >= $1 AND at <= $2 GROUP BY 1',
    window,
  )
  const [pageRows, totalRows, groupedRows, keyRows] = await Promise.all([page, total, grouped, keys])
  const facets: Record<string, Record<string, number>> = { providers: {}, models: {}, status: {}, failure_classes: {}, key_ids: {}, nodes: {}, picked_by: {}, moved_off: {}, check: {}, added_fallback: {} }
  for (const row of groupedRows.rows) if (row.value !== null) facets[row.facet]![row.value] = Number(row.count)
  for (const row of keyRows.rows) facets.key_ids![row.value] = Number(row.count)
  return { ids: pageRows.rows.map((row) => row.id), total: Number(totalRows.rows[0]?.total ?? 0), facets }
}

/** Sorted object keys, so two facet objects compare as JSON whatever order they were filled in. */
const canonical = (facets: Record<string, Record<string, number>>) => JSON.stringify(Object.keys(facets).sort().map((facet) => [facet, Object.entries(facets[facet]!).sort()]))

/** µs per row of the writer's own loop: encoding each row into a Buffer of its own. */
function perRowCosts(records: RequestRecord[]): { encode: number } {
  const pass = (work: (record: RequestRecord, index: number) => void) => {
    const started = performance.now()
    for (let index = 0; index < records.length; index++) work(records[index]!, index)
    return ((performance.now() - started) * 1000) / records.length
  }
  const encode = () => pass((record) => void rowBytes(record))
  const runs: number[] = []
  for (let round = 0; round < 7; round++) runs.push(encode())
  return { encode: runs.slice(2).sort((a, b) => a - b)[2]! }
}

/** A fresh, migrated database on the bench's server; `counted: false` disables the log's counting trigger (the rows alone, for the comparison). */
async function benchDatabase(server: BenchServer, name: string, counted = true): Promise<pg.Pool> {
  const pool = await createBenchDatabase(server, name)
  if (!counted) await pool.query('ALTER TABLE request_log DISABLE TRIGGER request_log_count')
  return pool
}

/**
 * What writing rows costs with their counts and without (the counting trigger disabled): Postgres's CPU
 * and this process's per row, each traffic shape written to two fresh databases in chunks that
 * take turns, so both sides see the same stretch of the machine.
 */
async function writeCosts(pools: { counted: pg.Pool; plain: pg.Pool }, postmaster: number, records: RequestRecord[], now: number) {
  const sides = {
    counted: { log: createRequestLog({ pool: pools.counted, now: () => now, isLeader: () => false }), pgMs: 0, ownMs: 0 },
    plain: { log: createRequestLog({ pool: pools.plain, now: () => now, isLeader: () => false }), pgMs: 0, ownMs: 0 },
  }
  await Promise.all([sides.counted.log.start(), sides.plain.log.start()])
  const chunk = 10_000
  for (let start = 0; start < records.length; start += chunk) {
    const order = (start / chunk) % 2 === 0 ? (['counted', 'plain'] as const) : (['plain', 'counted'] as const)
    for (const name of order) {
      const side = sides[name]
      const pgBefore = postgresCpuMs(postmaster)
      const ownBefore = process.cpuUsage()
      for (let index = start; index < Math.min(records.length, start + chunk); index++) side.log.listener(records[index]!)
      await side.log.flush()
      const own = process.cpuUsage(ownBefore)
      side.ownMs += (own.user + own.system) / 1000
      side.pgMs += postgresCpuMs(postmaster) - pgBefore
    }
  }
  await Promise.all([sides.counted.log.close(), sides.plain.log.close()])
  const perRow = (ms: number) => (ms * 1000) / records.length
  return { counted: { pg: perRow(sides.counted.pgMs), own: perRow(sides.counted.ownMs) }, plain: { pg: perRow(sides.plain.pgMs), own: perRow(sides.plain.ownMs) } }
}

/** Writing with counts and without, for three shapes of traffic: the day's mix from three nodes, the mix as one busy node writes it, and one route (every request alike, as bench/data-plane/http.mjs sends). */
async function costTable(server: BenchServer, name: string, sample: RequestRecord[], now: number): Promise<string[]> {
  const postmaster = Number(readFileSync(join(server.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  const template = sample[0]!
  const alike = sample.map((record) => ({ ...template, id: record.id, at: record.at }))
  // The day's mix as one busy node sees it: its own rows only, 5,000 a second (a batch of 250 holds 50 ms).
  const busy = sample.map((record, index) => ({ ...record, node_id: 'node-1', at: new Date(Date.parse(sample[0]!.at) + Math.floor(index / 5)).toISOString() }))
  const shapes: [string, RequestRecord[]][] = [["the day's mix, 3 nodes' rows at 23 a second (2M a day)", sample], ["the day's mix, one node's rows at 5,000 a second", busy], ['one route, every request alike', alike]]
  const costRows: string[] = []
  for (const [index, [label, records]] of shapes.entries()) {
    const pools = { counted: await benchDatabase(server, `${name}_counted_${index}`), plain: await benchDatabase(server, `${name}_plain_${index}`, false) }
    try {
      const cost = await writeCosts(pools, postmaster, records, now)
      costRows.push(`| ${label} | ${records.length.toLocaleString('en-US')} | ${cost.plain.pg.toFixed(1)} | ${cost.counted.pg.toFixed(1)} (${(cost.counted.pg / cost.plain.pg).toFixed(2)}x) | ${cost.plain.own.toFixed(1)} | ${cost.counted.own.toFixed(1)} (${(cost.counted.own / cost.plain.own).toFixed(2)}x) |`)
      console.log(costRows[costRows.length - 1])
    } finally {
      for (const [side, pool] of Object.entries(pools)) await dropBenchDatabase(server, pool, `${name}_${side}_${index}`)
    }
  }
  return costRows
}

async function main() {
  const server = await openBenchServer(join(benchDir, 'results', 'request-log-query'), 18421)
  const name = `request_log_query_bench_${Date.now()}`
  const pool = await benchDatabase(server, name)
  try {
    const now = Date.now()
    if (values['costs-only']) {
      const random = prng(15)
      const sample = Array.from({ length: 100_000 }, (_, index) => requestAt(now - DAY + Math.floor((index * DAY) / rowCount), random))
      await costTable(server, name, sample, now)
      return
    }
    const requestLog = createRequestLog({ pool, now: () => now, isLeader: () => false }, { capacity: 50_000 })
    await requestLog.start()
    const random = prng(15)
    const writeStarted = performance.now()
    const sample: RequestRecord[] = []
    for (let index = 0; index < rowCount; index++) {
      const record = requestAt(now - DAY + Math.floor((index * DAY) / rowCount), random)
      if (sample.length < 100_000) sample.push(record)
      requestLog.listener(record)
      if (index % 20_000 === 19_999) await requestLog.flush()
    }
    await requestLog.close()
    const stats = requestLog.stats()
    const writeSeconds = (performance.now() - writeStarted) / 1000
    console.log(`wrote ${stats.written} rows in ${writeSeconds.toFixed(0)} s (dropped ${JSON.stringify(stats.dropped)})`)
    await requestLog.summarize().catch(() => 0)
    await pool.query('ANALYZE')
    const { rows: sizes } = await pool.query<{ rows: string; minutes: string; facets: string }>(
      'SELECT (SELECT count(*) FROM request_log) AS rows, (SELECT count(*) FROM request_log_counts) AS minutes, (SELECT count(*) FROM request_log_facet_counts) AS facets',
    )

    const day = `from=${Math.floor((now - DAY) / 1000)}&to=${Math.floor(now / 1000)}`
    const cases: [string, string][] = [
      ['the Requests page: last 24 h, first page', day],
      ['one provider, 5xx, page 5', `${day}&providers=azure&status=5xx&offset=200`],
      ['a key it tried (key_ids)', `${day}&key_ids=openai-key-3`],
      ['moved off, last hour', `from=${Math.floor((now - 3_600_000) / 1000)}&moved_off=true`],
      ['one session (counted from rows)', `${day}&session_id=session-42`],
      ['search a message (counted from rows)', `${day}&search=every key tried`],
      ['slowest first (sorted over the window)', `${day}&sort=slowest`],
    ]
    const at = (list: number[], share: number) => list[Math.min(list.length - 1, Math.floor(share * list.length))]!
    const time = async (run: () => Promise<unknown>) => {
      const times: number[] = []
      await run()
      for (let index = 0; index < iterations; index++) {
        const started = performance.now()
        await run()
        times.push(performance.now() - started)
      }
      return times.sort((a, b) => a - b)
    }
    const rows: string[] = []
    for (const [label, params] of cases) {
      const query = parseLogQuery(Object.fromEntries(new URLSearchParams(params)), now)
      const times = await time(() => searchLogs(pool, query))
      rows.push(`| ${label} | \`${params.replace(/from=\d+&to=\d+&?/, '24 h ').replace(/from=\d+&?/, '')}\` | ${at(times, 0.5).toFixed(0)} | ${at(times, 0.95).toFixed(0)} | |`)
      console.log(rows[rows.length - 1])
    }
    // Side by side: the first case as stop 19 ran it, and the same answer from both.
    const first = parseLogQuery(Object.fromEntries(new URLSearchParams(cases[0]![1])), now)
    const before = await time(() => stop19(pool, first))
    rows.splice(1, 0, `| the same, stop 19's queries (counted from rows, page sorted over the window) | \`24 h\` | ${at(before, 0.5).toFixed(0)} | ${at(before, 0.95).toFixed(0)} | |`)
    const [now20, then19] = [await searchLogs(pool, first), await stop19(pool, first)]
    const same = now20.total === then19.total && canonical(now20.facets as unknown as Record<string, Record<string, number>>) === canonical(then19.facets) && JSON.stringify(now20.logs.map((entry) => entry.id)) === JSON.stringify(then19.ids)
    if (!same) throw new Error(`the counts answered differently from the rows: ${now20.total} against ${then19.total}`)
    const costs = perRowCosts(sample)
    const costRows = await costTable(server, name, sample, now)

    const table = [
      `Run ${new Date().toISOString().slice(0, 16)}Z, \`node --import tsx bench/reading/request-log-query.ts --rows ${rowCount} --iterations ${iterations}\`, Node ${process.version}, 2 shared cores, embedded PostgreSQL; load average ${loadavg()[0]!.toFixed(1)} at the end.`,
      `Written through the request log: ${Number(sizes[0]?.rows).toLocaleString('en-US')} rows over the last 24 h (3 nodes, 3 providers x 2 models x 10 keys; 7 % retried on a second key, 3 % failed) in ${writeSeconds.toFixed(0)} s, with ${Number(sizes[0]?.minutes).toLocaleString('en-US')} rows of per-minute and per-hour counts per combination and ${Number(sizes[0]?.facets).toLocaleString('en-US')} per facet value.`,
      `Stop 19's queries and these answer the same total, facets and page: ${same ? 'yes' : 'no'}. The writer's loop per row: encoding ${costs.encode.toFixed(2)} µs (the counts are the trigger's: nothing per row here).`,
      '',
      '| query | parameters | p50 ms | p95 ms | |',
      '| --- | --- | ---: | ---: | --- |',
      ...rows,
      '',
      'Writing rows with their counts (the log\'s trigger) and without (the trigger disabled), Postgres CPU per row (the server and every backend) and this process\'s CPU per row (building nothing: encoding and sending; the counting is Postgres\'s), written as fast as the writer goes, in chunks of 10,000 rows taking turns:',
      '',
      '| traffic | rows | Postgres µs per row, rows alone | with counts | this process µs per row, rows alone | with counts |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      ...costRows,
    ].join('\n')
    console.log(table)
    if (!values['no-readme']) replaceSection(join(benchDir, 'README.md'), 'request-log-query', table)
  } finally {
    if (values.keep) {
      await pool.end()
      console.log(`kept the database ${name} on ${server.url.replace(/:[^:@/]*@/, ':***@')}`)
    } else await dropBenchDatabase(server, pool, name)
    await server.close()
  }
}

await main()
