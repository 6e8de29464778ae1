/**
 * The facets and total of a log query, counted from the per-minute counts (the baseline migration,
 * minutes.ts) for the whole minutes of the window they cover, and from the rows themselves for
 * the rest: the part of the first and last minute inside the window, and any time before the
 * counts began. A day at 22 requests a second is 1.9M rows: counting them took 7.5 s, summing
 * their counts and reading a page took 74 ms (bench/README.md, "The request log read back").
 *
 * Both sides are grouped by the same values (`Combination`), and the facets and the total of
 * any filter on those values are summed from the combinations here; a filter on anything else
 * (session, request id, latency, tokens, search) is counted from the rows of the window.
 */
import type pg from 'pg'
import type { LogFacets, LogQuery } from './query.ts'
import { REQUEST_LOG_TABLE } from './rows.ts'
import { REQUEST_LOG_COMBINATIONS_TABLE, REQUEST_LOG_COUNTS_TABLE } from './minutes.ts'

const MINUTE_MS = 60_000
const HOUR_MS = 3_600_000

/** The model a row counts under: the one served, else the one asked for. */
export const MODEL = 'coalesce(served_model, requested_model)'
/**
 * Every key a request was served by or tried. A row holds them in `key_ids` only when it tried
 * another key than the one that served it; most rows hold NULL there (rows.ts).
 */
export const KEY_IDS = 'coalesce(key_ids, array_remove(ARRAY[served_key_id], NULL))'

/** Requests of a window alike in every value the facets count. */
interface Combination {
  served_provider: string | null
  model: string
  status: number
  failure_class: string | null
  node_id: string
  picked_by: string
  moved_off: boolean
  is_check: boolean
  added_fallback_served: boolean
  key_ids: string[]
  requests: string
}

/** A time range `[from, to)`, or `[from, to]` when `closed` (the window's own end). */
export interface Range {
  from: number
  to: number
  closed?: boolean
}

/** Where a window's counts come from: whole hours and whole minutes from the counts, the rest from rows. */
export interface CountSources {
  rows: Range[]
  minutes: Range[]
  hours: Range[]
}

const floorTo = (ms: number, unit: number) => Math.floor(ms / unit) * unit
const ceilTo = (ms: number, unit: number) => Math.ceil(ms / unit) * unit

/**
 * Splits the window `[from, to]`, given the first minute the counts cover: its whole hours from
 * the hours' counts, the whole minutes left from the minutes', and from rows the part of a
 * minute at either end and any time before the counts began.
 */
export function countSources(from: number, to: number, since: number): CountSources {
  const firstMinute = Math.max(ceilTo(from, MINUTE_MS), ceilTo(since, MINUTE_MS))
  const lastMinute = floorTo(to, MINUTE_MS)
  if (!(firstMinute < lastMinute)) return { rows: [{ from, to, closed: true }], minutes: [], hours: [] }
  const rows: Range[] = from < firstMinute ? [{ from, to: firstMinute }] : []
  rows.push({ from: lastMinute, to, closed: true })
  const firstHour = ceilTo(firstMinute, HOUR_MS)
  const lastHour = floorTo(lastMinute, HOUR_MS)
  if (!(firstHour < lastHour)) return { rows, minutes: [{ from: firstMinute, to: lastMinute }], hours: [] }
  const minutes = [{ from: firstMinute, to: firstHour }, { from: lastHour, to: lastMinute }].filter((range) => range.from < range.to)
  return { rows, minutes, hours: [{ from: firstHour, to: lastHour }] }
}

/** True when every filter of `query` is on a value the combinations hold. */
export function countable(query: LogQuery): boolean {
  return query.sessionId === null && query.requestId === null && query.minLatencyMs === null && query.maxLatencyMs === null && query.minTokens === null && query.maxTokens === null && query.search === null
}

/** True when the requests of `combination` pass the filters of `query` (those `countable` allows), as query.ts's SQL reads them. */
function passes(combination: Combination, query: LogQuery): boolean {
  const { providers, models, statuses, statusClasses, failureClasses, keyIds, nodes } = query
  if (providers.length > 0 && (combination.served_provider === null || !providers.includes(combination.served_provider))) return false
  if (models.length > 0 && !models.includes(combination.model)) return false
  if ((statuses.length > 0 || statusClasses.length > 0) && !statuses.includes(combination.status) && !statusClasses.includes(Math.trunc(combination.status / 100))) return false
  if (failureClasses.length > 0 && !failureClasses.includes(combination.failure_class ?? 'none')) return false
  if (keyIds.length > 0 && !combination.key_ids.some((key) => keyIds.includes(key))) return false
  if (nodes.length > 0 && !nodes.includes(combination.node_id)) return false
  if (query.movedOff !== null && combination.moved_off !== query.movedOff) return false
  if (query.check !== null && combination.is_check !== query.check) return false
  if (query.addedFallback !== null && combination.added_fallback_served !== query.addedFallback) return false
  if (query.pickedBy !== null && combination.picked_by !== query.pickedBy) return false
  return true
}

/** The first minute the per-minute counts cover; rows before it are counted as rows. */
async function countsSince(pool: pg.Pool): Promise<number> {
  const result = await pool.query<{ since: Date }>('SELECT min(since) AS since FROM request_log_counts_since')
  const since = result.rows[0]?.since
  return since instanceof Date ? since.getTime() : Number.POSITIVE_INFINITY
}

/** The combinations of a window (a combination may come more than once: from the counts and from rows), as `countSources` splits it. */
async function combinations(pool: pg.Pool, from: number, to: number): Promise<Combination[]> {
  const sources = countSources(from, to, await countsSince(pool))
  const values: (string | number)[] = []
  const add = (value: string | number) => `$${values.push(value)}`
  const time = (ms: number) => `${add(new Date(ms).toISOString())}::timestamptz`
  const within = (range: Range) => `at >= ${time(range.from)} AND at ${range.closed === true ? '<=' : '<'} ${time(range.to)}`
  const parts: string[] = []
  const counted: string[] = []
  for (const [span, ranges] of [[MINUTE_MS, sources.minutes], [HOUR_MS, sources.hours]] as const) {
    for (const range of ranges) counted.push(`SELECT combination, requests FROM ${REQUEST_LOG_COUNTS_TABLE} WHERE span = ${span / 1000} AND ${within(range)}`)
  }
  if (counted.length > 0) {
    // Summed per combination first, then given its values: a few hundred lookups for a day.
    parts.push(`SELECT c.served_provider, c.model, c.status, c.failure_class, c.node_id, c.picked_by, c.moved_off, c.is_check, c.added_fallback_served, c.key_ids, counted.requests
                  FROM (SELECT combination, sum(requests) AS requests FROM (${counted.join(' UNION ALL ')}) spans GROUP BY combination) counted
                  JOIN ${REQUEST_LOG_COMBINATIONS_TABLE} c ON c.id = counted.combination`)
  }
  for (const range of sources.rows) {
    parts.push(`SELECT served_provider, ${MODEL} AS model, status, failure_class, node_id, picked_by, moved_off, is_check, added_fallback_served, ${KEY_IDS} AS key_ids, count(*) AS requests
                  FROM ${REQUEST_LOG_TABLE} WHERE ${within(range)} GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10`)
  }
  const result = await pool.query<Combination>(parts.join('\nUNION ALL\n'), values)
  return result.rows
}

/** The facets of the window of `query` (its other filters not applied), and its total when `countable` (else null: count the rows). */
export async function countWindow(pool: pg.Pool, query: LogQuery): Promise<{ facets: LogFacets; total: number | null }> {
  const facets: LogFacets = { providers: {}, models: {}, status: {}, failure_classes: {}, key_ids: {}, nodes: {}, picked_by: {}, moved_off: {}, check: {}, added_fallback: {} }
  const add = (facet: Record<string, number>, value: string, requests: number) => (facet[value] = (facet[value] ?? 0) + requests)
  const filtered = countable(query)
  let total = 0
  for (const combination of await combinations(pool, query.from, query.to)) {
    const requests = Number(combination.requests)
    if (filtered && passes(combination, query)) total += requests
    if (combination.served_provider !== null) add(facets.providers, combination.served_provider, requests)
    add(facets.models, combination.model, requests)
    add(facets.status, String(combination.status), requests)
    add(facets.failure_classes, combination.failure_class ?? 'none', requests)
    add(facets.nodes, combination.node_id, requests)
    add(facets.picked_by, combination.picked_by, requests)
    add(facets.moved_off, String(combination.moved_off), requests)
    add(facets.check, String(combination.is_check), requests)
    add(facets.added_fallback, String(combination.added_fallback_served), requests)
    for (const key of combination.key_ids) add(facets.key_ids, key, requests)
  }
  return { facets, total: filtered ? total : null }
}
