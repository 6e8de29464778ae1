/**
 * Where Postgres's CPU per request-log row goes (issue 15): realistic records encoded into COPY
 * batches (text format: bench/lib/request-log-text.ts through `rowEncoder`, as the product wrote
 * them before; binary: the product's `encodeRow`), COPYed into fresh day-partitioned tables of
 * a private embedded server, one variant (schema, batch size, setting) at a time. Reports the
 * server's CPU per row (every process under the postmaster, plus the children it reaped: an
 * autovacuum worker that ended mid-run counts), wall time, COPY bytes, WAL bytes and heap
 * bytes per row. Paired: each variant runs right after a run of `base` and is reported as the
 * median of its ratios to those, since this shared 2-core VM moves absolute figures by ±20 %.
 * The variants start from migration 0015's table (`entry` json; the file is kept in
 * packages/store/test/fixtures/legacy-migrations/); the product's rows since migration 0020 carry entry.ts's array in a text column, which is variant `text`.
 *
 *   node --import tsx bench/recording/request-log-pg.ts [--rows 100000] [--rounds 3] [--variants base,text,...]
 *        [--base base] [--alternate] [--check-binary] [--encode-bench]
 *        [--sustained 60 [--sustained-variants base,lean]] [--rate 9000] [--maintenance]
 *
 * --base pairs against another variant (`--base text --variants binary`); --alternate runs the
 * variant first every other round. The `binary*` variants send COPY's binary format
 * (bench/lib/request-log-binary.ts); --check-binary first proves their rows equal the text
 * format's, column by column; --encode-bench times the two encoders in JS.
 *
 * --sustained N writes the product's table (migration 0015; or --sustained-variants a,b, one
 * after the other) for N s (≤ 60) at --rate rows/s in 1000-row batches with autovacuum on, and
 * splits the server's CPU by process (backend, walwriter, checkpointer, autovacuum ...). --maintenance times VACUUM and ANALYZE of a
 * filled partition (what autovacuum would do to it). Run under `flock /work/bench.lock`.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { availableParallelism } from 'node:os'
import pg from 'pg'
import { migrate } from '../../packages/store/src/index.ts'
import { requestLogMigration } from '../../packages/store/test/fixtures/legacy-migrations/0015-request-log.ts'
import { seededRandom as random, startPrivateServer } from '@switchboard/test-kit'
import type { RequestRecord } from '../../packages/history/src/request-log/record.ts'
import { encodeRow, rowBytes } from '../../packages/history/src/request-log/rows.ts'
import { newRequestId } from '../../packages/history/src/request-log/id.ts'
import { COPY_HEADER_BYTES, copyRows } from '../../packages/history/src/writer/copy.ts'
import { BinarySink, rowEncoder } from '../../packages/history/src/writer/binary-sink.ts'
import { copyJson, encodeTextRow } from '../lib/request-log-text.ts'
import { clockTicks, readStatFile } from '../lib/processes.mjs'
import { binaryBatch } from '../lib/request-log-binary.ts'

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
    variants: { type: 'string' },
    sustained: { type: 'string' },
    'sustained-variants': { type: 'string', default: 'base' },
    rate: { type: 'string', default: '9000' },
    maintenance: { type: 'boolean', default: false },
    base: { type: 'string', default: 'base' },
    'check-binary': { type: 'boolean', default: false },
    alternate: { type: 'boolean', default: false },
    'encode-bench': { type: 'boolean', default: false },
  },
})
const rowCount = Math.min(500_000, Math.max(1_000, Number(values.rows)))
const cores = availableParallelism()
const rounds = Math.min(15, Math.max(1, Number(values.rounds)))

// ---- records -------------------------------------------------------------------------------

const DAY_START = Date.parse('2026-12-01T00:00:00Z')
const KEYS = [
  { id: 'openai-e36c55bb6211', name: 'prod-east-1' },
  { id: 'openai-9f1a2b3c4d5e', name: 'prod-east-2' },
  { id: 'openai-07c1d2e3f4a5', name: 'prod-west-1' },
  { id: 'openai-5b6c7d8e9f01', name: 'batch-pool' },
]

/** `count` records as the gateway makes them for an openai/gpt-4o-mini load, ~9k a second from 10:00Z. */
function buildRecords(count: number): RequestRecord[] {
  const next = random(15)
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T
  const hex = (length: number) => Array.from({ length }, () => Math.floor(next() * 16).toString(16)).join('')
  const records: RequestRecord[] = []
  for (let index = 0; index < count; index++) {
    const at = DAY_START + 10 * 3_600_000 + Math.floor(index / 9)
    const served = pick(KEYS)
    const skipped = pick(KEYS.filter((key) => key !== served))
    const ok = next() < 0.96
    const stream = next() < 0.3
    const latency = 80 + Math.floor(next() * 1800)
    const prompt = 150 + Math.floor(next() * 1800)
    const completion = 10 + Math.floor(next() * 600)
    const session = next() < 0.5 ? `sess-${hex(16)}` : null
    const log = [
      `Picked openai/gpt-4o-mini with key ${served.name} (${served.id}): weight 0.${Math.floor(next() * 90 + 10)} of 3 keys in play.`,
      `Skipped key ${skipped.name} (${skipped.id}): its rate-limit window resets in ${1 + Math.floor(next() * 50)}s, backing off.`,
    ]
    if (session !== null) log.push(`Session ${session} kept on openai key ${served.name}: affinity held, the key is healthy.`)
    if (next() < 0.5) log.push(`Served by openai/gpt-4o-mini on the first attempt in ${latency} ms; no fallback was needed here.`)
    records.push({
      id: newRequestId(at),
      at: new Date(at).toISOString(),
      node_id: 'node-3f9c2a1b',
      region: 'local',
      surface: 'chat_completions',
      gateway_key: 'team-search',
      requested: { provider: 'openai', model: 'gpt-4o-mini', fallbacks: next() < 0.2 ? ['anthropic/claude-3-5-haiku-latest'] : [], session_id: session },
      served: { provider: 'openai', model: 'gpt-4o-mini', key_id: served.id, key_name: served.name },
      status: ok ? 200 : 429,
      failure_class: ok ? null : 'rate_limit',
      message: ok ? null : 'Rate limit reached for gpt-4o-mini in organization org-x on tokens per min (TPM).',
      latency_ms: latency,
      ttft_ms: stream ? Math.floor(latency / 4) : null,
      usage: ok ? { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } : null,
      stream,
      attempts: [{ provider: 'openai', model: 'gpt-4o-mini', key_id: served.id, key_name: served.name, status: ok ? 200 : 429, failure_class: ok ? null : 'rate_limit', latency_ms: latency - 3, wait_hint_ms: ok ? null : 20_000 }],
      routing: {
        picked_by: 'routing',
        moved_off: null,
        skipped_keys: [{ provider: 'openai', model: 'gpt-4o-mini', key_id: skipped.id, key_name: skipped.name, reason: 'rate_limit_window' }],
        check: null,
        added_fallback_served: false,
        session_kept: session === null ? null : true,
        pinned_kept_failed: false,
        log,
      },
      content: null,
    })
  }
  return records
}

/** The fields not already columns: what a slimmer `entry` would keep. */
function slimEntry(record: RequestRecord): string {
  const { requested, attempts, routing, usage, message, ttft_ms, content } = record
  return copyJson(JSON.stringify({ fallbacks: requested.fallbacks, message, ttft_ms, usage, attempts, routing: { moved_off: routing.moved_off, skipped_keys: routing.skipped_keys, check: routing.check, session_kept: routing.session_kept, pinned_kept_failed: routing.pinned_kept_failed, log: routing.log }, content }))
}

// ---- variants ------------------------------------------------------------------------------

const ALL_COLUMNS = [
  'at', 'id', 'node_id', 'region', 'surface', 'gateway_key', 'requested_provider', 'requested_model', 'session_id',
  'served_provider', 'served_model', 'served_key_id', 'served_key_name', 'key_ids', 'status', 'failure_class',
  'latency_ms', 'total_tokens', 'stream', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served', 'search', 'entry',
]

interface Variant {
  name: string
  what: string
  /** The migration's CREATE TABLE, changed. */
  ddl?: (sql: string) => string
  /** Columns written (default all). */
  columns?: string[]
  entry?: 'slim'
  batch?: number
  /** How the partition is made: logged (default) or UNLOGGED. */
  unlogged?: boolean
  /** An index made on the partition (`USING brin (at)`). */
  partitionIndex?: string
  /** Storage parameters of the partition. */
  partitionWith?: string
  /** COPY into the day partition itself instead of the parent. */
  direct?: boolean
  /** Each COPY in BEGIN; SET LOCAL synchronous_commit = off; COPY; COMMIT. */
  asyncCommit?: boolean
  /** Server settings for the run (ALTER SYSTEM + reload, reset after). */
  settings?: Record<string, string>
  /** COPY's binary format (bench/lib/request-log-binary.ts) instead of text; every column. */
  binary?: boolean
}

const without = (name: string) => ALL_COLUMNS.filter((column) => column !== name)
const VARIANTS: Variant[] = [
  { name: 'base', what: 'as today: json entry, search, all columns, 1000 rows/COPY' },
  { name: 'text', what: 'entry text', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL') },
  { name: 'jsonb', what: 'entry jsonb', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry jsonb NOT NULL') },
  { name: 'nosearch', what: 'no search column', ddl: (sql) => sql.replace('search text NOT NULL,', ''), columns: without('search') },
  { name: 'slim', what: 'entry only the fields not in columns (json)', entry: 'slim' },
  { name: 'batch5k', what: '5000 rows/COPY', batch: 5000 },
  { name: 'async', what: 'SET LOCAL synchronous_commit = off per COPY', asyncCommit: true },
  { name: 'unlogged', what: 'the partition UNLOGGED (lost on a crash)', unlogged: true },
  { name: 'nopk', what: 'no primary key (its share)', ddl: (sql) => sql.replace(/,\s*PRIMARY KEY \(at, id\)/, '') },
  { name: 'toasttarget', what: 'partition toast_tuple_target = 8160 (no compression tried)', partitionWith: 'toast_tuple_target = 8160' },
  { name: 'direct', what: 'COPY into the day partition (no routing)', direct: true },
  { name: 'walcomp', what: 'wal_compression = pglz (no lz4 in this build)', settings: { wal_compression: 'pglz' } },
  { name: 'entryonly', what: 'only at, id, entry (the filter columns\' share)', ddl: (sql) => sql.replace(/node_id text NOT NULL,[\s\S]*search text NOT NULL,/, ''), columns: ['at', 'id', 'entry'] },
  { name: 'noentry', what: 'no entry column (entry\'s share)', ddl: (sql) => sql.replace(/,\s*entry json NOT NULL/, ''), columns: without('entry') },
  {
    name: 'lean', what: 'slim entry as text, no search column (the filter columns stay)',
    ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL').replace('search text NOT NULL,', ''), columns: without('search'), entry: 'slim',
  },
  { name: 'brin', what: 'no primary key, a BRIN index on at instead', ddl: (sql) => sql.replace(/,\s*PRIMARY KEY \(at, id\)/, ''), partitionIndex: 'USING brin (at)' },
  { name: 'binary', what: 'entry text, COPY binary format', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL'), binary: true },
  { name: 'binaryjson', what: 'entry json, COPY binary format', binary: true },
  // Binary COPY buffers every row of a batch before a multi-insert (its 64 kB flush counts text
  // lines, 0 bytes in binary), so a 1000-row batch makes 1000 slots, each pinning the same tuple
  // descriptor in the resource owner, whose hash probes grow with them: smaller batches avoid it.
  { name: 'binary250', what: 'entry text, COPY binary format, 250 rows/COPY', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL'), binary: true, batch: 250 },
  { name: 'binary250+nopk', what: 'binary250 without the primary key (its share)', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL').replace(/,\s*PRIMARY KEY \(at, id\)/, ''), binary: true, batch: 250 },
  { name: 'binary250+brin', what: 'binary250, a BRIN index on at instead of the primary key', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL').replace(/,\s*PRIMARY KEY \(at, id\)/, ''), partitionIndex: 'USING brin (at)', binary: true, batch: 250 },
  { name: 'binary250+unlogged', what: 'binary250, the partition UNLOGGED (WAL\'s share)', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL'), unlogged: true, binary: true, batch: 250 },
  { name: 'noinsertvacuum', what: 'base, its partition with autovacuum_vacuum_insert_threshold = -1 (no vacuum for inserts)', partitionWith: 'autovacuum_vacuum_insert_threshold = -1' },
  { name: 'binary100', what: 'entry text, COPY binary format, 100 rows/COPY', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL'), binary: true, batch: 100 },
  { name: 'text250', what: 'entry text, 250 rows/COPY', ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL'), batch: 250 },
  {
    name: 'text+nosearch+async', what: 'entry text, no search, async commit',
    ddl: (sql) => sql.replace('entry json NOT NULL', 'entry text NOT NULL').replace('search text NOT NULL,', ''), columns: without('search'), asyncCommit: true,
  },
]

// ---- the server's CPU ----------------------------------------------------------------------

/** What a postgres process is, from its title (`postgres: walwriter`, `postgres: user db host COPY`). */
function processKind(pid: number, postmaster: number): string {
  if (pid === postmaster) return 'postmaster'
  let title = ''
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
  } catch { /* gone */ }
  const kind = /^postgres: (checkpointer|background writer|walwriter|autovacuum launcher|autovacuum worker|logical replication launcher|io worker|walsummarizer)/.exec(title)
  return kind ? (kind[1] as string) : 'backend'
}

/**
 * CPU ms of the server: user time by process kind, `system` the kernel time of them all, and
 * `reaped` what its ended children used (the postmaster's cutime + cstime).
 */
function serverCpu(dataDir: string): Map<string, number> {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  const byKind = new Map<string, number>()
  const add = (kind: string, ticks: number) => byKind.set(kind, (byKind.get(kind) ?? 0) + (ticks * 1000) / clockTicks)
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readStatFile(`/proc/${entry}/stat`, Number(entry))
      if (stat.pid !== postmaster && stat.ppid !== postmaster) continue
      add(processKind(stat.pid, postmaster), stat.user)
      add('system', stat.system)
      if (stat.pid === postmaster) {
        const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
        add('reaped', Number(fields[13]) + Number(fields[14]))
      }
    } catch { /* gone */ }
  }
  return byKind
}

/** CPU ms the whole machine spent busy (every core), from /proc/stat. */
function machineBusyMs(): number {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] as string).trim().split(/\s+/).slice(1).map(Number)
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
  return ((fields.slice(0, 8).reduce((sum, ticks) => sum + ticks, 0) - idle) * 1000) / clockTicks
}

/** CPU ms of this process (the bench). */
const selfMs = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

const total = (cpu: Map<string, number>) => [...cpu.values()].reduce((sum, ms) => sum + ms, 0)
const minus = (after: Map<string, number>, before: Map<string, number>) => new Map([...after].map(([kind, ms]) => [kind, ms - (before.get(kind) ?? 0)]))

// ---- COPY ----------------------------------------------------------------------------------

/** The part of pg's connection a submittable talks to (as writer/copy.ts). */
interface CopyConnection {
  query(text: string): void
  sendCopyFromChunk(chunk: Buffer): void
  endCopyFrom(): void
}

/** One COPY on a client already held (for the in-transaction variants); same bytes on the wire as copyRows. */
function copyOnClient(client: pg.PoolClient, statement: string, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const submittable = {
      callback: undefined as undefined | ((error: Error | null) => void),
      submit: (connection: CopyConnection) => connection.query(statement),
      handleCopyInResponse: (connection: CopyConnection) => {
        connection.sendCopyFromChunk(data.subarray(COPY_HEADER_BYTES))
        connection.endCopyFrom()
      },
      handleCommandComplete: () => {},
      handleEmptyQuery: () => {},
      // pg drops the query before an ErrorResponse reaches it: no ReadyForQuery follows here.
      handleError: (error: Error) => reject(error),
      handleReadyForQuery: () => resolve(),
    }
    ;(client as unknown as { query(submittable: object): void }).query(submittable)
  })
}

/** The rows of `records` as `variant` writes them: COPY batches, each after COPY_HEADER_BYTES of room. */
function batches(rowsAsFields: string[][], records: RequestRecord[], variant: Variant): Buffer[] {
  const columns = variant.columns ?? ALL_COLUMNS
  const picks = columns.map((column) => ALL_COLUMNS.indexOf(column))
  const size = variant.batch ?? 1000
  const out: Buffer[] = []
  if (variant.binary) {
    if (variant.columns !== undefined || variant.entry !== undefined) throw new Error(`${variant.name}: binary writes every column, entry as encodeRow's`)
    for (let start = 0; start < records.length; start += size) out.push(binaryBatch(records.slice(start, start + size), COPY_HEADER_BYTES))
    return out
  }
  for (let start = 0; start < rowsAsFields.length; start += size) {
    const parts: string[] = []
    for (let index = start; index < Math.min(start + size, rowsAsFields.length); index++) {
      const fields = rowsAsFields[index] as string[]
      const row = picks.map((pick) => (pick === 24 && variant.entry === 'slim' ? slimEntry(records[index] as RequestRecord) : fields[pick]))
      parts.push(`${row.join('\t')}\n`)
    }
    const text = parts.join('')
    const buffer = Buffer.allocUnsafe(COPY_HEADER_BYTES + Buffer.byteLength(text))
    buffer.write(text, COPY_HEADER_BYTES)
    out.push(buffer)
  }
  return out
}

// ---- runs ----------------------------------------------------------------------------------

const database = await startPrivateServer('rlpg')
const admin = new pg.Pool({ connectionString: database.handle.url, max: 2 })
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const lsn = async () => (await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn
const walBytes = async (from: string, to: string) => Number((await admin.query<{ bytes: string }>('SELECT pg_wal_lsn_diff($2, $1)::bigint AS bytes', [from, to])).rows[0]!.bytes)
const partitionFor = (table: string) => `${table}_p20261201`

try {
  await migrate(admin)
  const settings = await admin.query<{ name: string; setting: string; unit: string | null }>(
    `SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1) ORDER BY name`,
    [['server_version', 'shared_buffers', 'wal_level', 'fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'wal_compression', 'wal_buffers', 'wal_writer_delay', 'wal_writer_flush_after', 'commit_delay', 'checkpoint_timeout', 'max_wal_size', 'min_wal_size', 'checkpoint_completion_target', 'autovacuum', 'autovacuum_naptime', 'autovacuum_vacuum_insert_threshold', 'autovacuum_vacuum_insert_scale_factor', 'autovacuum_analyze_threshold', 'autovacuum_analyze_scale_factor', 'autovacuum_vacuum_max_threshold', 'default_toast_compression', 'data_checksums', 'io_method', 'track_io_timing', 'jit', 'huge_pages', 'max_connections', 'backend_flush_after', 'bgwriter_flush_after', 'checkpoint_flush_after', 'wal_init_zero', 'wal_recycle', 'track_counts', 'default_statistics_target', 'log_min_duration_statement', 'maintenance_work_mem']],
  )
  console.log('server settings:')
  for (const row of settings.rows) console.log(`  ${row.name} = ${row.setting}${row.unit ? ` (${row.unit})` : ''}`)

  const records = buildRecords(rowCount)
  // The text encoder, as the request log's listener ran it; the text batches are cut from its bytes.
  const textRowBytes = rowEncoder(new BinarySink(), encodeTextRow)
  /** One record's text row. */
  const textRow = (record: RequestRecord): string => textRowBytes(record).toString('utf8')
  const rowsAsFields: string[][] = []
  let encodedBytes = 0
  for (const record of records) {
    const text = textRow(record)
    encodedBytes += Buffer.byteLength(text)
    const fields = text.slice(0, -1).split('\t')
    if (fields.length !== ALL_COLUMNS.length) throw new Error(`a row of ${fields.length} fields`)
    rowsAsFields.push(fields)
  }
  const mean = (bytes: (index: number) => number) => Math.round(records.reduce((sum, _, index) => sum + bytes(index), 0) / rowCount)
  const field = (column: number) => (index: number) => Buffer.byteLength((rowsAsFields[index] as string[])[column] as string)
  console.log(`\n${rowCount} records; mean encoded row ${Math.round(encodedBytes / rowCount)} B: entry ${mean(field(24))} B, search ${mean(field(23))} B, the other columns ${Math.round(encodedBytes / rowCount) - mean(field(24)) - mean(field(23))} B; slim entry ${mean((index) => Buffer.byteLength(slimEntry(records[index] as RequestRecord)))} B`)
  console.log(`a row: ${(rowsAsFields[1] as string[]).join('\t')}`)

  if (values['check-binary']) await checkBinary()
  if (values['encode-bench']) encodeBench()
  if (values.variants !== undefined || (values.sustained === undefined && !values['check-binary'] && !values['encode-bench'])) await compareVariants()
  if (values.sustained !== undefined) {
    for (const name of values['sustained-variants'].split(',')) {
      const variant = VARIANTS.find((candidate) => candidate.name === name)
      if (variant === undefined) throw new Error(`no variant ${name}`)
      await sustained(variant, Math.min(60, Math.max(5, Number(values.sustained))), Math.min(20_000, Math.max(100, Number(values.rate))))
    }
  }
  if (values.maintenance) await maintenance()

  async function makeTable(table: string, variant: Variant, autovacuum: boolean): Promise<void> {
    const sql = (variant.ddl ?? ((text: string) => text))(requestLogMigration.sql).replace('CREATE TABLE request_log', `CREATE TABLE ${table}`)
    await admin.query(sql)
    const storage = [...(autovacuum ? [] : ['autovacuum_enabled = off']), ...(variant.partitionWith ? [variant.partitionWith] : [])]
    await admin.query(`CREATE ${variant.unlogged ? 'UNLOGGED ' : ''}TABLE ${partitionFor(table)} PARTITION OF ${table} FOR VALUES FROM ('2026-12-01T00:00:00Z') TO ('2026-12-02T00:00:00Z')${storage.length > 0 ? ` WITH (${storage.join(', ')})` : ''}`)
    if (variant.partitionIndex) await admin.query(`CREATE INDEX ON ${partitionFor(table)} ${variant.partitionIndex}`)
  }

  async function runVariant(variant: Variant, round: number) {
    const table = `rlb_${variant.name.replaceAll('+', '_')}_${round}`
    await admin.query(`DROP TABLE IF EXISTS ${table}`)
    await makeTable(table, variant, false)
    for (const [name, value] of Object.entries(variant.settings ?? {})) await admin.query(`ALTER SYSTEM SET ${name} = '${value}'`)
    if (variant.settings) await admin.query('SELECT pg_reload_conf()')
    const data = batches(rowsAsFields, records, variant)
    const copyBytes = data.reduce((sum, buffer) => sum + buffer.length - COPY_HEADER_BYTES, 0)
    const target = variant.direct ? partitionFor(table) : table
    const columns = variant.columns ?? ALL_COLUMNS
    const statement = `COPY ${target} (${columns.map((name) => `"${name}"`).join(', ')}) FROM STDIN${variant.binary ? ' WITH (FORMAT binary)' : ''}`
    const pool = new pg.Pool({ connectionString: database.handle.url, max: 1 })
    const held = variant.asyncCommit || variant.binary ? await pool.connect() : undefined
    await admin.query('CHECKPOINT')
    await sleep(200)
    const cpuBefore = serverCpu(database.dataDir)
    const busyBefore = machineBusyMs()
    const selfBefore = selfMs()
    const walBefore = await lsn()
    const started = performance.now()
    for (const buffer of data) {
      if (held === undefined) await copyRows(pool, target, columns, buffer)
      else if (!variant.asyncCommit) await copyOnClient(held, statement, buffer)
      else {
        await held.query('BEGIN')
        await held.query('SET LOCAL synchronous_commit = off')
        await copyOnClient(held, statement, buffer)
        await held.query('COMMIT')
      }
    }
    const wallMs = performance.now() - started
    const walAfter = await lsn()
    await sleep(200) // the walwriter's last flushes
    const cpu = minus(serverCpu(database.dataDir), cpuBefore)
    // Whatever else ran meanwhile, as a share of the machine: CPU per row rises with it (shared caches, cores).
    const foreign = (machineBusyMs() - busyBefore - total(cpu) - (selfMs() - selfBefore)) / ((wallMs + 200) * cores)
    held?.release()
    await pool.end()
    const heap = Number((await admin.query<{ bytes: string }>(`SELECT pg_table_size('${partitionFor(table)}') AS bytes`)).rows[0]!.bytes)
    const count = Number((await admin.query<{ count: string }>(`SELECT count(*) FROM ${table}`)).rows[0]!.count)
    if (count !== rowCount) throw new Error(`${table}: ${count} rows, not ${rowCount}`)
    // Rows past TOAST_TUPLE_THRESHOLD (~2 kB) have their largest field compressed (pglz) or moved out of line.
    const compressed = columns.includes('entry') ? Number((await admin.query<{ count: string }>(`SELECT count(*) FILTER (WHERE pg_column_compression(entry) IS NOT NULL) AS count FROM ${table}`)).rows[0]!.count) : 0
    if (variant.settings) {
      for (const name of Object.keys(variant.settings)) await admin.query(`ALTER SYSTEM RESET ${name}`)
      await admin.query('SELECT pg_reload_conf()')
    }
    await admin.query(`DROP TABLE ${table}`)
    return { cpuUs: (total(cpu) * 1000) / rowCount, backendUs: ((cpu.get('backend') ?? 0) * 1000) / rowCount, systemUs: ((cpu.get('system') ?? 0) * 1000) / rowCount, wallUs: (wallMs * 1000) / rowCount, copyBytes: copyBytes / rowCount, walBytes: (await walBytes(walBefore, walAfter)) / rowCount, heapBytes: heap / rowCount, compressedShare: compressed / rowCount, foreign }
  }

  async function compareVariants(): Promise<void> {
    const wanted = values.variants?.split(',') ?? VARIANTS.map((variant) => variant.name)
    const chosen = wanted.map((name) => {
      const variant = VARIANTS.find((candidate) => candidate.name === name)
      if (variant === undefined) throw new Error(`no variant ${name}; there are ${VARIANTS.map((candidate) => candidate.name).join(', ')}`)
      return variant
    })
    // Paired: each variant right after a run of `base`, so load from elsewhere weighs on both alike;
    // the ratio to that base run is the figure to compare.
    const base = VARIANTS.find((candidate) => candidate.name === values.base)
    if (base === undefined) throw new Error(`no base variant ${values.base}`)
    const results = new Map<string, (Awaited<ReturnType<typeof runVariant>> & { ratio: number; saved: number })[]>()
    for (let round = 0; round < rounds; round++) {
      for (const variant of chosen) {
        // --alternate: every other round the variant runs first, so an order effect cancels out.
        const first = values.alternate && round % 2 === 1 && variant !== base
        const early = first ? await runVariant(variant, round) : undefined
        const reference = variant === base ? undefined : await runVariant(base, round)
        const result = early ?? (await runVariant(variant, round))
        const ratio = reference === undefined ? 1 : result.cpuUs / reference.cpuUs
        const saved = reference === undefined ? 0 : reference.cpuUs - result.cpuUs
        if (reference !== undefined) results.set(base.name, [...(results.get(base.name) ?? []), { ...reference, ratio: 1, saved: 0 }])
        results.set(variant.name, [...(results.get(variant.name) ?? []), { ...result, ratio, saved }])
        console.log(`round ${round + 1}${first ? ' (variant first)' : ''} ${variant.name}: postgres ${result.cpuUs.toFixed(1)} µs/row (backend user ${result.backendUs.toFixed(1)}, system ${result.systemUs.toFixed(1)}), wall ${result.wallUs.toFixed(1)} µs/row, other work ${(result.foreign * 100).toFixed(0)} %${reference ? `; base ${first ? "after" : "before"} it ${reference.cpuUs.toFixed(1)} µs/row, other work ${(reference.foreign * 100).toFixed(0)} %: ${ratio.toFixed(3)}x` : ''}`)
      }
    }
    console.log(`\npaired against ${base.name}:`)
    console.log(`\n| variant | what | postgres CPU µs/row (median) | × its paired base run (median; runs) | µs/row less than it (median; min–max) | backend user µs/row | system µs/row | wall µs/row | COPY B/row | WAL B/row | heap B/row | entries compressed | other work |`)
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (const variant of [base, ...chosen.filter((candidate) => candidate !== base)]) {
      const runs = results.get(variant.name) ?? []
      if (runs.length === 0) continue
      const of = (key: keyof (typeof runs)[number]) => median(runs.map((run) => run[key] as number))
      console.log(`| ${variant.name} | ${variant.what} | ${of('cpuUs').toFixed(1)} | ${variant === base ? '1' : `${of('ratio').toFixed(2)} (${runs.map((run) => run.ratio.toFixed(2)).join(', ')})`} | ${variant === base ? '' : `${of('saved').toFixed(2)} (${Math.min(...runs.map((run) => run.saved)).toFixed(2)}–${Math.max(...runs.map((run) => run.saved)).toFixed(2)})`} | ${of('backendUs').toFixed(1)} | ${of('systemUs').toFixed(1)} | ${of('wallUs').toFixed(1)} | ${Math.round(of('copyBytes'))} | ${Math.round(of('walBytes'))} | ${Math.round(of('heapBytes'))} | ${(of('compressedShare') * 100).toFixed(1)} % | ${(of('foreign') * 100).toFixed(0)} % |`)
    }
  }

  /**
   * The binary variants' rows against the text format's: the same records COPYed both ways into
   * two tables, then every column of every row compared (each row's text output, so json, float8
   * and timestamptz compare exactly), and a few rows read back through pg shown side by side.
   */
  async function checkBinary(): Promise<void> {
    // The records, and some made to reach what they do not: empty and two-element key_ids, no
    // usage, fractional latencies, text COPY has to escape (tab, newline, backslash, quotes) and non-ASCII.
    const odd = 'Tab\there, line\nbreak, back\\slash, "quoted", café Ünïcode 😀'
    const edges: RequestRecord[] = records.slice(0, 6).map((record, index) => {
      const copy = structuredClone(record)
      copy.id = newRequestId(Date.parse(copy.at) + 1)
      if (index === 0) {
        copy.served = { ...copy.served, key_id: null, key_name: null }
        copy.attempts = []
        copy.usage = null
      } else if (index === 1) copy.attempts.push({ ...(copy.attempts[0] as RequestRecord['attempts'][number]), key_id: 'openai-second', key_name: 'second "key"', status: 500, failure_class: 'transient' })
      else if (index === 2) {
        copy.message = odd
        copy.failure_class = 'rate_limit'
        copy.routing.log = [odd, 'plain']
        copy.requested.session_id = `Sess-ÉÀ-${odd}`
        copy.requested.fallbacks = ['anthropic/claude', odd]
      } else if (index === 3) {
        copy.latency_ms = 0.1 + 0.2
        copy.ttft_ms = 12.5
      } else if (index === 4) {
        copy.routing.moved_off = { provider: 'anthropic', reason: 'failed' }
        copy.routing.check = { key_id: 'k1', key_name: 'Ünï', provider: 'openai', model: 'gpt-4o-mini', outcome: 'served' }
        copy.routing.added_fallback_served = true
        copy.gateway_key = null
      } else copy.content = { request: odd, response: null, truncated: true }
      return copy
    })
    const checked = [...records, ...edges]
    const checkedFields = checked.map((record) => {
      return textRow(record).slice(0, -1).split('\t')
    })
    for (const [textName, binaryName] of [['text', 'binary'], ['base', 'binaryjson']] as const) {
      const textVariant = VARIANTS.find((candidate) => candidate.name === textName) as Variant
      const binaryVariant = VARIANTS.find((candidate) => candidate.name === binaryName) as Variant
      const [textTable, binaryTable] = ['rlb_check_text', 'rlb_check_binary']
      for (const [table, variant] of [[textTable, textVariant], [binaryTable, binaryVariant]] as const) {
        await admin.query(`DROP TABLE IF EXISTS ${table}`)
        await makeTable(table, variant, false)
      }
      const pool = new pg.Pool({ connectionString: database.handle.url, max: 1 })
      for (const buffer of batches(checkedFields, checked, textVariant)) await copyRows(pool, textTable, ALL_COLUMNS, buffer)
      const client = await pool.connect()
      const statement = `COPY ${binaryTable} (${ALL_COLUMNS.map((name) => `"${name}"`).join(', ')}) FROM STDIN WITH (FORMAT binary)`
      for (const buffer of batches(checkedFields, checked, binaryVariant)) await copyOnClient(client, statement, buffer)
      client.release()
      await pool.end()
      const count = async (table: string) => Number((await admin.query<{ count: string }>(`SELECT count(*) FROM ${table}`)).rows[0]!.count)
      const differing = Number((await admin.query<{ count: string }>(
        `SELECT count(*) FROM ((SELECT r::text FROM ${textTable} r EXCEPT ALL SELECT r::text FROM ${binaryTable} r) UNION ALL (SELECT r::text FROM ${binaryTable} r EXCEPT ALL SELECT r::text FROM ${textTable} r)) d`,
      )).rows[0]!.count)
      const joined = Number((await admin.query<{ count: string }>(`SELECT count(*) FROM ${textTable} t JOIN ${binaryTable} b ON t.at = b.at AND t.id = b.id AND t::text = b::text`)).rows[0]!.count)
      const nulls = (await admin.query(`SELECT count(*) FILTER (WHERE session_id IS NULL) AS session_null, count(*) FILTER (WHERE total_tokens IS NULL) AS tokens_null, count(*) FILTER (WHERE failure_class IS NULL) AS failure_null, count(*) FILTER (WHERE cardinality(key_ids) = 2) AS two_keys, count(*) FILTER (WHERE cardinality(key_ids) = 0) AS no_keys, count(*) FILTER (WHERE stream) AS streamed FROM ${binaryTable}`)).rows[0]
      console.log(`\ncheck ${textName} (text COPY) vs ${binaryName} (binary COPY): ${await count(textTable)} vs ${await count(binaryTable)} rows; rows differing in any column ${differing}; rows equal joined on (at, id) ${joined} of ${checked.length} (${edges.length} edge records); binary table ${JSON.stringify(nulls)}`)
      const ids = [records[1]!.id, records[Math.floor(rowCount / 2)]!.id, ...edges.map((record) => record.id)]
      const read = async (table: string) => (await admin.query(`SELECT * FROM ${table} WHERE id = ANY($1::uuid[]) ORDER BY at, id`, [ids])).rows
      const [fromText, fromBinary] = [await read(textTable), await read(binaryTable)]
      const same = JSON.stringify(fromText) === JSON.stringify(fromBinary)
      console.log(`  ${fromText.length} rows read back through pg (every column): ${same ? 'identical' : 'DIFFERENT'}`)
      console.log(`  text:   ${JSON.stringify(fromText.find((row) => row.id === edges[2]!.id))}`)
      if (!same) console.log(`  binary: ${JSON.stringify(fromBinary.find((row) => row.id === edges[2]!.id))}`)
      if (differing !== 0 || joined !== checked.length || !same) throw new Error(`${binaryName}: rows differ from ${textName}'s`)
      for (const table of [textTable, binaryTable]) await admin.query(`DROP TABLE ${table}`)
    }
  }

  /**
   * JS CPU per row of the two encoders, each through a BinarySink into a Buffer reset per row
   * (the text one, and the product's binary encodeRow): every record
   * once per pass, passes alternated, a bounded count of them.
   */
  function encodeBench(): void {
    const buffer = Buffer.allocUnsafeSlow(1 << 16)
    const textSink = new BinarySink()
    const binarySink = new BinarySink()
    let bytes = { text: 0, binary: 0 }
    /** Every record encoded by `encode` through `sink` into the one buffer; the bytes they took, in all. */
    const encodeAll = (sink: BinarySink, encode: (sink: BinarySink, record: RequestRecord) => void): number => {
      let total = 0
      for (const record of records) {
        sink.reset(buffer, 0)
        encode(sink, record)
        total += sink.position
      }
      return total
    }
    const passes = {
      text: () => {
        bytes.text = encodeAll(textSink, encodeTextRow)
      },
      binary: () => {
        bytes.binary = encodeAll(binarySink, encodeRow)
      },
      // As the request log's listener runs encodeRow: into a Buffer of the row's own.
      'binary via rowBytes': () => {
        for (const record of records) rowBytes(record)
      },
    }
    const times = new Map<string, number[]>()
    for (let pass = 0; pass < 12; pass++) {
      const names = Object.keys(passes) as (keyof typeof passes)[]
      for (const name of pass % 2 === 0 ? names : names.reverse()) {
        const started = performance.now()
        passes[name]()
        const us = ((performance.now() - started) * 1000) / rowCount
        if (pass >= 2) times.set(name, [...(times.get(name) ?? []), us]) // two passes of warm-up
      }
    }
    console.log(`\nJS encode, ${rowCount} records a pass, 10 passes after 2 of warm-up (µs/row: median, min–max):`)
    for (const [name, list] of times) console.log(`  ${name}: ${median(list).toFixed(3)} (${Math.min(...list).toFixed(3)}–${Math.max(...list).toFixed(3)})`)
    console.log(`  bytes/row: text ${(bytes.text / rowCount).toFixed(1)} (the COPY data), binary ${(bytes.binary / rowCount).toFixed(1)} (+19 header and 2 trailer per batch)`)
  }

  /** The product's table at a steady rate with autovacuum on: where the server's CPU goes, by process. */
  async function sustained(variant: Variant, seconds: number, rate: number): Promise<void> {
    const table = 'rlb_sustained'
    const columns = variant.columns ?? ALL_COLUMNS
    await admin.query(`DROP TABLE IF EXISTS ${table}`)
    await makeTable(table, variant, true)
    const data = batches(rowsAsFields, records, { ...variant, batch: 1000 })
    const pool = new pg.Pool({ connectionString: database.handle.url, max: 1 })
    await admin.query('CHECKPOINT')
    const before = serverCpu(database.dataDir)
    let last = before
    const started = performance.now()
    let written = 0
    let lastLine = started
    for (let batch = 0; performance.now() - started < seconds * 1000; batch++) {
      // The records go round again with their `at` moved on (the key is (at, id)).
      const buffer = data[batch % data.length] as Buffer
      const due = started + ((written + 1000) / rate) * 1000
      if (due > performance.now()) await sleep(due - performance.now())
      await copyRows(pool, table, columns, shifted(buffer, Math.floor(batch / data.length)))
      written += 1000
      if (performance.now() - lastLine >= 10_000) {
        const now = serverCpu(database.dataDir)
        const slice = minus(now, last)
        console.log(`  ${((performance.now() - started) / 1000).toFixed(0)} s, ${written} rows: ${[...slice].filter(([, ms]) => ms > 0).map(([kind, ms]) => `${kind} ${Math.round(ms)} ms`).join(', ')}`)
        last = now
        lastLine = performance.now()
      }
    }
    await sleep(500)
    const cpu = minus(serverCpu(database.dataDir), before)
    await pool.end()
    const stats = await admin.query(`SELECT n_tup_ins, autovacuum_count, autoanalyze_count, last_autovacuum, last_autoanalyze FROM pg_stat_user_tables WHERE relname = '${partitionFor(table)}'`)
    console.log(`\nsustained ${variant.name} ${seconds} s at ${rate} rows/s: ${written} rows, postgres ${((total(cpu) * 1000) / written).toFixed(1)} µs/row; by process (µs/row): ${[...cpu].filter(([, ms]) => ms > 0).map(([kind, ms]) => `${kind} ${((ms * 1000) / written).toFixed(2)}`).join(', ')}`)
    console.log('  partition stats:', JSON.stringify(stats.rows[0]))
    await admin.query(`DROP TABLE ${table}`)
  }

  /** The CPU of VACUUM and ANALYZE of one filled partition, as autovacuum would run them. */
  async function maintenance(): Promise<void> {
    const table = 'rlb_maintenance'
    await admin.query(`DROP TABLE IF EXISTS ${table}`)
    await makeTable(table, VARIANTS[0] as Variant, false)
    const pool = new pg.Pool({ connectionString: database.handle.url, max: 1 })
    for (const buffer of batches(rowsAsFields, records, VARIANTS[0] as Variant)) await copyRows(pool, table, ALL_COLUMNS, buffer)
    await pool.end()
    for (const command of [`ANALYZE ${partitionFor(table)}`, `VACUUM ${partitionFor(table)}`, `VACUUM ${partitionFor(table)}`]) {
      const before = serverCpu(database.dataDir)
      const started = performance.now()
      await admin.query(command)
      const cpu = minus(serverCpu(database.dataDir), before)
      console.log(`${command} of ${rowCount} rows: postgres ${Math.round(total(cpu))} ms CPU (${((total(cpu) * 1000) / rowCount).toFixed(2)} µs/row), ${Math.round(performance.now() - started)} ms wall`)
    }
    for (const statement of [`COPY ${table} FROM STDIN (FREEZE)`, `COPY ${partitionFor(table)} FROM STDIN (FREEZE)`]) {
      const client = await admin.connect()
      try {
        await copyOnClient(client, statement, Buffer.alloc(COPY_HEADER_BYTES))
        console.log(`${statement}: accepted`)
      } catch (error) {
        console.log(`${statement}: ${error instanceof Error ? error.message : String(error)}`)
      } finally {
        client.release()
      }
    }
    await admin.query(`DROP TABLE ${table}`)
  }
} finally {
  await admin.end()
  await database.dispose()
}

/**
 * A copy of a batch with every row's `at` (its first field, an ISO time of 24 characters) moved
 * `laps` times the span of the records on, so the records can go round again without repeating
 * a key (at, id). The entry keeps its old time: nothing reads it here.
 */
function shifted(buffer: Buffer, laps: number): Buffer {
  if (laps === 0) return buffer
  const copy = Buffer.from(buffer)
  const span = Math.ceil(rowCount / 9) + 1_000
  for (let start = COPY_HEADER_BYTES; start < copy.length; start = copy.indexOf(0x0a, start) + 1) {
    const at = Date.parse(copy.toString('latin1', start, start + 24))
    copy.write(new Date(at + laps * span).toISOString(), start, 'latin1')
    if (copy.indexOf(0x0a, start) < 0) break
  }
  return copy
}
