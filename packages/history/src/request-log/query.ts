/**
 * The queries behind `GET /api/logs` and `GET /api/logs/:id`: parameters checked (a bad one is
 * a `HistoryQueryError` naming it), then one page, its total and the window's facets.
 * Spec: design.md "History, incidents, request log"; reference/adaptive-routing-overview.txt,
 * "The request log" (moved-off and check filters).
 */
import type pg from 'pg'
import { FAILURE_CLASSES } from '@switchboard/routing'
import { keysOf, modelOf } from '@switchboard/store'
import { isRequestId, requestIdTime } from './id.ts'
import type { RequestRecord } from './record.ts'
import { REQUEST_LOG_TABLE } from './rows.ts'
import { ENTRY_COLUMNS, recordOfRow, type EntryRow } from './entry.ts'
import { countable, countWindow } from './counts.ts'
import { HistoryQueryError } from '../queries/params.ts'

/** How a page is ordered. */
export const LOG_SORTS = ['newest', 'oldest', 'slowest', 'fastest', 'most_tokens'] as const
export type LogSort = (typeof LOG_SORTS)[number]

/** Failure classes a log entry can carry, plus `none` for a success. */
export const LOG_FAILURE_CLASSES = ['none', ...FAILURE_CLASSES] as const

export const DEFAULT_LOG_LIMIT = 50
export const MAX_LOG_LIMIT = 500
/** Without `from`, the window is the last 24 hours. */
export const DEFAULT_LOG_WINDOW_MS = 24 * 3_600_000

const PARAMS = new Set([
  'from', 'to', 'providers', 'models', 'status', 'failure_classes', 'key_ids', 'session_id', 'request_id', 'nodes',
  'moved_off', 'check', 'added_fallback', 'picked_by', 'min_latency_ms', 'max_latency_ms', 'min_tokens', 'max_tokens',
  'search', 'sort', 'limit', 'offset',
])

/** Reads `from`/`to`: RFC 3339, or unix seconds. */
export function parseTime(param: string, text: string): number {
  const trimmed = text.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(trimmed) ? Date.parse(trimmed) : Number.NaN
  if (Number.isNaN(ms)) throw new HistoryQueryError(param, `${param} must be RFC 3339 (2026-12-01T14:00:00Z) or unix seconds, got "${text}".`)
  return ms
}

function list(param: string, text: string | undefined): string[] {
  if (text === undefined) return []
  const values = text.split(',').map((value) => value.trim()).filter((value) => value !== '')
  if (values.length === 0) throw new HistoryQueryError(param, `${param} is empty: give comma-separated values, or leave it out.`)
  return values
}

function flag(param: string, text: string | undefined): boolean | null {
  if (text === undefined) return null
  if (text === 'true') return true
  if (text === 'false') return false
  throw new HistoryQueryError(param, `${param} must be true or false, got "${text}".`)
}

function number(param: string, text: string | undefined, options: { integer?: boolean; min: number; max?: number }): number | null {
  if (text === undefined) return null
  const value = Number(text)
  const whole = options.integer ? Number.isInteger(value) : Number.isFinite(value)
  if (text.trim() === '' || !whole || value < options.min || (options.max !== undefined && value > options.max)) {
    const kind = options.integer ? 'an integer' : 'a number'
    const range = options.max === undefined ? `at least ${options.min}` : `from ${options.min} to ${options.max}`
    throw new HistoryQueryError(param, `${param} must be ${kind} ${range}, got "${text}".`)
  }
  return value
}

/** `min_<name>` and `max_<name>`, each at least 0, the first not above the second. */
function bounds(params: Record<string, string>, name: string, integer: boolean): [number | null, number | null] {
  const [minParam, maxParam] = [`min_${name}`, `max_${name}`]
  const min = number(minParam, params[minParam], { integer, min: 0 })
  const max = number(maxParam, params[maxParam], { integer, min: 0 })
  if (min !== null && max !== null && min > max) throw new HistoryQueryError(minParam, `${minParam} (${min}) is above ${maxParam} (${max}).`)
  return [min, max]
}

/** Checks the parameters of `GET /api/logs`; throws `HistoryQueryError` for the first bad one. */
export function parseLogQuery(params: Record<string, string>, now: number) {
  for (const name of Object.keys(params)) {
    if (!PARAMS.has(name)) throw new HistoryQueryError(name, `Unknown parameter "${name}". The log takes: ${[...PARAMS].join(', ')}.`)
  }
  const to = params.to === undefined ? now : parseTime('to', params.to)
  const from = params.from === undefined ? to - DEFAULT_LOG_WINDOW_MS : parseTime('from', params.from)
  if (from > to) throw new HistoryQueryError('from', 'from is after to: the window must start before it ends.')

  // Exact statuses and status classes (`4` for `4xx`).
  const statuses: number[] = []
  const statusClasses: number[] = []
  for (const value of list('status', params.status)) {
    const status = /^([1-5])xx$/i.exec(value)
    if (status) statusClasses.push(Number(status[1]))
    else if (/^[1-5]\d\d$/.test(value)) statuses.push(Number(value))
    else throw new HistoryQueryError('status', `status takes HTTP statuses (200, 429) or classes (2xx, 5xx), got "${value}".`)
  }
  const failureClasses = list('failure_classes', params.failure_classes)
  const unknownClass = failureClasses.find((value) => !(LOG_FAILURE_CLASSES as readonly string[]).includes(value))
  if (unknownClass !== undefined) throw new HistoryQueryError('failure_classes', `Unknown failure class "${unknownClass}"; use ${LOG_FAILURE_CLASSES.join(', ')}.`)
  const requestId = params.request_id === undefined ? null : params.request_id.trim().toLowerCase()
  if (requestId !== null && !isRequestId(requestId)) throw new HistoryQueryError('request_id', `request_id must be a request id as x-request-id gives it (a UUIDv7), got "${params.request_id}".`)
  const pickedBy = params.picked_by
  if (pickedBy !== undefined && pickedBy !== 'routing' && pickedBy !== 'caller') throw new HistoryQueryError('picked_by', `picked_by must be routing or caller, got "${pickedBy}".`)
  const sort = params.sort ?? 'newest'
  if (!(LOG_SORTS as readonly string[]).includes(sort)) throw new HistoryQueryError('sort', `sort must be one of ${LOG_SORTS.join(', ')}, got "${sort}".`)

  const [minLatencyMs, maxLatencyMs] = bounds(params, 'latency_ms', false)
  const [minTokens, maxTokens] = bounds(params, 'tokens', true)
  const search = params.search === undefined || params.search.trim() === '' ? null : params.search.trim()
  const sessionId = params.session_id === undefined || params.session_id === '' ? null : params.session_id

  return {
    from,
    to,
    providers: list('providers', params.providers),
    models: list('models', params.models),
    statuses,
    statusClasses,
    failureClasses,
    keyIds: list('key_ids', params.key_ids),
    sessionId,
    requestId,
    nodes: list('nodes', params.nodes),
    movedOff: flag('moved_off', params.moved_off),
    check: flag('check', params.check),
    addedFallback: flag('added_fallback', params.added_fallback),
    pickedBy: (pickedBy ?? null) as 'routing' | 'caller' | null,
    minLatencyMs,
    maxLatencyMs,
    minTokens,
    maxTokens,
    search,
    sort: sort as LogSort,
    limit: number('limit', params.limit, { integer: true, min: 1, max: MAX_LOG_LIMIT }) ?? DEFAULT_LOG_LIMIT,
    offset: number('offset', params.offset, { integer: true, min: 0 }) ?? 0,
  }
}

/** A checked request-log query. */
export type LogQuery = ReturnType<typeof parseLogQuery>

/**
 * What `search` matches, lowercased: the request id, session, providers and models asked and
 * served, gateway key, key ids and names, and the message. A row's `search` column holds the
 * message, its attempts' other key names and any of these columns lowercasing would change
 * (rows.ts), so a row whose ids and names are lowercase, as most are, stores none of them twice.
 * Older rows hold every part in `search` itself, and match the same way.
 */
const SEARCHED = [
  'id::text', 'session_id', 'requested_provider', 'requested_model', 'served_provider', 'served_model', 'gateway_key',
  'served_key_id', "array_to_string(key_ids, E'\\n')", 'served_key_name', 'search',
]

/** The filters of one value, each compared with its column when given. */
const COMPARED = [
  ['sessionId', 'session_id ='], ['movedOff', 'moved_off ='], ['check', 'is_check ='], ['addedFallback', 'added_fallback_served ='], ['pickedBy', 'picked_by ='],
  ['minLatencyMs', 'latency_ms >='], ['maxLatencyMs', 'latency_ms <='], ['minTokens', 'total_tokens >='], ['maxTokens', 'total_tokens <='],
] as const satisfies readonly (readonly [keyof LogQuery, string])[]

/** The WHERE clause of a query and its parameters. */
function where(query: LogQuery): { sql: string; values: unknown[] } {
  const values: unknown[] = []
  const add = (value: unknown) => `$${values.push(value)}`
  const clauses = [`at >= ${add(new Date(query.from).toISOString())}`, `at <= ${add(new Date(query.to).toISOString())}`]
  if (query.providers.length > 0) clauses.push(`served_provider = ANY(${add(query.providers)}::text[])`)
  if (query.models.length > 0) clauses.push(`${modelOf()} = ANY(${add(query.models)}::text[])`)
  if (query.statuses.length > 0 || query.statusClasses.length > 0) {
    const either: string[] = []
    if (query.statuses.length > 0) either.push(`status = ANY(${add(query.statuses)}::int[])`)
    if (query.statusClasses.length > 0) either.push(`(status / 100) = ANY(${add(query.statusClasses)}::int[])`)
    clauses.push(`(${either.join(' OR ')})`)
  }
  if (query.failureClasses.length > 0) clauses.push(`coalesce(failure_class, 'none') = ANY(${add(query.failureClasses)}::text[])`)
  if (query.keyIds.length > 0) clauses.push(`${keysOf()} && ${add(query.keyIds)}::text[]`)
  if (query.nodes.length > 0) clauses.push(`node_id = ANY(${add(query.nodes)}::text[])`)
  if (query.requestId !== null) {
    // The id carries its time: the partition is found without scanning the window.
    clauses.push(`id = ${add(query.requestId)}::uuid`, `at = ${add(new Date(requestIdTime(query.requestId)).toISOString())}`)
  }
  for (const [field, test] of COMPARED) if (query[field] !== null) clauses.push(`${test} ${add(query[field])}`)
  if (query.search !== null) {
    const pattern = add(`%${query.search.toLowerCase().replace(/[\\%_]/g, (char) => `\\${char}`)}%`)
    clauses.push(`(${SEARCHED.map((column) => `${column} LIKE ${pattern}`).join(' OR ')})`)
  }
  return { sql: clauses.join(' AND '), values }
}

const ORDER: Record<LogSort, string> = {
  newest: 'at DESC, id DESC',
  oldest: 'at ASC, id ASC',
  slowest: 'latency_ms DESC, at DESC',
  fastest: 'latency_ms ASC, at DESC',
  most_tokens: 'total_tokens DESC NULLS LAST, at DESC',
}

/**
 * The windows a page sorted by time is looked for in, each ending where the query's window
 * ends (starting, for `oldest`), the last the whole window: the newest rows of a busy day are
 * found in its last seconds, without sorting the day (the log has no index to read in order).
 */
const PAGE_SPANS_MS = [10_000, 120_000, 1_800_000, 6 * 3_600_000]

/** One page of rows: in the shortest of PAGE_SPANS_MS's windows that holds the whole page, else in the whole window. */
async function readPage(pool: pg.Pool, query: LogQuery): Promise<EntryRow[]> {
  const spans = (query.sort === 'newest' || query.sort === 'oldest') && query.requestId === null ? PAGE_SPANS_MS.filter((span) => span < query.to - query.from) : []
  for (const span of [...spans, Number.POSITIVE_INFINITY]) {
    const window = span === Number.POSITIVE_INFINITY ? query : query.sort === 'newest' ? { ...query, from: query.to - span } : { ...query, to: query.from + span }
    const filter = where(window)
    const rows = await pool.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM ${REQUEST_LOG_TABLE} WHERE ${filter.sql} ORDER BY ${ORDER[query.sort]} LIMIT ${query.limit} OFFSET ${query.offset}`,
      filter.values,
    )
    // Every row outside this window sorts after every row in it: a full page here is the page.
    if (rows.rows.length === query.limit || span === Number.POSITIVE_INFINITY) return rows.rows
  }
  return []
}

/** One page of the log, its total and the window's facets. */
export async function searchLogs(pool: pg.Pool, query: LogQuery) {
  const counted = countWindow(pool, query)
  // A total known from the counts that ends before the page spares looking for rows that are not there.
  const page = countable(query) ? counted.then(({ total }) => (total !== null && total <= query.offset ? [] : readPage(pool, query))) : readPage(pool, query)
  const total = counted.then(async ({ total }) => {
    if (total !== null) return total
    const filter = where(query)
    const count = await pool.query<{ total: string }>(`SELECT count(*) AS total FROM ${REQUEST_LOG_TABLE} WHERE ${filter.sql}`, filter.values)
    return Number(count.rows[0]?.total ?? 0)
  })
  const [rows, { facets }, totalRows] = await Promise.all([page, counted, total])
  const logs = rows.map(recordOfRow)
  // The key names seen in this page, by key id (for the filters' labels).
  const keyNames: Record<string, string> = {}
  for (const entry of logs) {
    if (entry.served.key_id !== null && entry.served.key_name !== null) keyNames[entry.served.key_id] = entry.served.key_name
    for (const attempt of entry.attempts) keyNames[attempt.key_id] = attempt.key_name
  }
  return { logs, total: totalRows, facets, from: new Date(query.from).toISOString(), to: new Date(query.to).toISOString(), limit: query.limit, offset: query.offset, key_names: keyNames }
}

/** One page of the log. */
export type LogPage = Awaited<ReturnType<typeof searchLogs>>

/** One request whole, found by its id (the id's time finds its partition); null when not logged. */
export async function readLog(pool: pg.Pool, id: string): Promise<RequestRecord | null> {
  const normal = id.trim().toLowerCase()
  if (!isRequestId(normal)) throw new HistoryQueryError('id', `"${id}" is not a request id: use the x-request-id (or extra_fields.request_id) of an answer.`)
  const result = await pool.query<EntryRow>(`SELECT ${ENTRY_COLUMNS} FROM ${REQUEST_LOG_TABLE} WHERE at = $1 AND id = $2::uuid`, [new Date(requestIdTime(normal)).toISOString(), normal])
  const row = result.rows[0]
  return row === undefined ? null : recordOfRow(row)
}

/** Where a request sits in routing history: the window (5 minutes either side) and entities (`route:`, `direction:`) it touched. */
export function historyLink(entry: RequestRecord) {
  const at = Date.parse(entry.at)
  const entities = new Set<string>()
  const { served, routing } = entry
  if (served.provider !== null && served.model !== null) {
    if (served.key_id !== null) entities.add(`route:${served.provider}:${served.model}:${served.key_id}`)
    entities.add(`direction:${served.provider}:${served.model}`)
  }
  if (routing.moved_off !== null) entities.add(`direction:${routing.moved_off.provider}:${entry.requested.model}`)
  if (routing.check !== null) entities.add(`route:${routing.check.provider}:${routing.check.model}:${routing.check.key_id}`)
  for (const key of routing.skipped_keys) entities.add(`route:${key.provider}:${key.model}:${key.key_id}`)
  for (const attempt of entry.attempts) if (attempt.failure_class !== null) entities.add(`route:${attempt.provider}:${attempt.model}:${attempt.key_id}`)
  const from = new Date(at - 5 * 60_000).toISOString()
  const to = new Date(at + 5 * 60_000).toISOString()
  const list = [...entities]
  // The incidents of that moment: the issues list with the window and entities.
  const issues = `/api/adaptive-routing/history/issues?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}${list.length > 0 ? `&entities=${encodeURIComponent(list.join(','))}` : ''}`
  return { from, to, entities: list, issues }
}
