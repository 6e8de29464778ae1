/**
 * The facets and total of a log query, counted from the per-minute and per-hour counts the log's
 * trigger keeps (store's migrations 0026 and 0027) for the whole minutes and hours of the window,
 * and from the rows themselves for the part of the first and last minute inside the window. A
 * day at 22 requests a second is 1.9M rows: counting them took 7.5 s (bench/README.md, "The
 * request log read back").
 *
 * The facets are each counted over the whole window, the other filters not applied: they are
 * summed from the counts per facet value (`request_log_facet_counts`), and so is the total of a
 * query that filters nothing (every request has one status). The total of a filter on the
 * facets' values is summed from the counts per combination of all ten (`request_log_counts`),
 * here; a filter on anything else (session, request id, latency, tokens, search) is counted
 * from the rows of the window.
 */
import type pg from 'pg'
import { facetValues, KEPT_COLUMNS, keptValues } from '@switchboard/store'
import type { LogQuery } from './query.ts'
import { REQUEST_LOG_TABLE } from './rows.ts'
import { coverWindow } from '../queries/timeline.ts'

/** The counts' table, partitioned by day like the log's. */
export const REQUEST_LOG_COUNTS_TABLE = 'request_log_counts'
/** The counts per facet value, partitioned by day like the log's. */
export const REQUEST_LOG_FACET_COUNTS_TABLE = 'request_log_facet_counts'
/** The values of each combination the counts name. */
export const REQUEST_LOG_COMBINATIONS_TABLE = 'request_log_combinations'
/** The spans the counts are kept in (seconds): a minute and an hour. */
export const COUNT_SPANS = [60, 3600] as const

/** The facets of a page: counts per filter value over the whole window (other filters not applied), as the history API's. */
const LOG_FACETS = ['providers', 'models', 'status', 'failure_classes', 'key_ids', 'nodes', 'picked_by', 'moved_off', 'check', 'added_fallback'] as const
export type LogFacets = Record<(typeof LOG_FACETS)[number], Record<string, number>>

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

/** The parts of the window [from, to] the counts cover, each as its range's SQL condition on `at`, and its parameters. */
function windowParts(from: number, to: number) {
  const cover = coverWindow(from, to, 3600, COUNT_SPANS)
  const values: string[] = []
  const time = (ms: number) => `$${values.push(new Date(ms).toISOString())}::timestamptz`
  // Each span's range on its own: the planner prunes the days of each.
  const blocks = cover.blocks.map((block) => `span = ${block.seconds} AND at >= ${time(block.fromMs)} AND at < ${time(block.toMs)}`)
  const rows = cover.snapshots.map((range) => `at >= ${time(range.fromMs)} AND at ${range.closed ? '<=' : '<'} ${time(range.toMs)}`)
  return { blocks, rows, values }
}

/**
 * The facets of the window: the counts per facet value of its whole hours and minutes, and its
 * rows' for the rest, summed per value. Counts of rows deleted since are zeros (the delete
 * trigger): left out, as the rows are.
 */
async function facetsOf(pool: pg.Pool, from: number, to: number): Promise<LogFacets> {
  const { blocks, rows, values } = windowParts(from, to)
  const parts = [
    ...blocks.map((range) => `SELECT facet, value, requests FROM ${REQUEST_LOG_FACET_COUNTS_TABLE} WHERE ${range}`),
    ...rows.map((range) => `SELECT facet.name, facet.value, 1 FROM ${REQUEST_LOG_TABLE} AS logged CROSS JOIN LATERAL (${facetValues('logged')}) AS facet(name, value) WHERE logged.${range} AND facet.value IS NOT NULL`),
  ]
  const result = await pool.query<{ facet: keyof LogFacets; value: string; requests: string }>(
    `SELECT facet, value, sum(requests) AS requests FROM (${parts.join(' UNION ALL ')}) AS counted (facet, value, requests) GROUP BY 1, 2 HAVING sum(requests) <> 0`,
    values,
  )
  const facets = Object.fromEntries(LOG_FACETS.map((facet) => [facet, {}])) as LogFacets
  for (const row of result.rows) facets[row.facet][row.value] = Number(row.requests)
  return facets
}

/**
 * The total of a filter on the facets' values: the requests of the window's combinations that
 * pass it, whole hours and minutes from the counts, the rest from rows (a combination may come
 * more than once: from the counts and from rows).
 */
async function filteredTotal(pool: pg.Pool, query: LogQuery): Promise<number> {
  const { blocks, rows, values } = windowParts(query.from, query.to)
  const parts: string[] = []
  if (blocks.length > 0) {
    // Summed per combination, then given its values. Zeros (rows deleted) left out, as in facetsOf.
    parts.push(`SELECT ${KEPT_COLUMNS.map((column) => `c.${column}`).join(', ')}, counted.requests
                  FROM (SELECT combination, sum(requests) AS requests FROM (${blocks.map((range) => `SELECT combination, requests FROM ${REQUEST_LOG_COUNTS_TABLE} WHERE ${range}`).join(' UNION ALL ')}) AS spans GROUP BY combination HAVING sum(requests) <> 0) AS counted
                  JOIN ${REQUEST_LOG_COMBINATIONS_TABLE} c ON c.id = counted.combination`)
  }
  for (const range of rows) {
    parts.push(`SELECT ${keptValues('')}, count(*) AS requests FROM ${REQUEST_LOG_TABLE} WHERE ${range} GROUP BY ${KEPT_COLUMNS.map((_, index) => index + 1).join(', ')}`)
  }
  const result = await pool.query<Combination>(parts.join('\nUNION ALL\n'), values)
  return result.rows.reduce((total, combination) => (passes(combination, query) ? total + Number(combination.requests) : total), 0)
}

/** True when `query` filters on none of the values the facets count. */
function unfiltered(query: LogQuery): boolean {
  const lists = [query.providers, query.models, query.statuses, query.statusClasses, query.failureClasses, query.keyIds, query.nodes]
  return lists.every((list) => list.length === 0) && [query.movedOff, query.check, query.addedFallback, query.pickedBy].every((value) => value === null)
}

/** The facets of the window of `query` (its other filters not applied), and its total when `countable` (else null: count the rows). */
export async function countWindow(pool: pg.Pool, query: LogQuery): Promise<{ facets: LogFacets; total: number | null }> {
  const bare = countable(query) && unfiltered(query)
  const [facets, total] = await Promise.all([facetsOf(pool, query.from, query.to), countable(query) && !bare ? filteredTotal(pool, query) : null])
  // Every request has one status: with no filter, the total is that facet's.
  return { facets, total: bare ? Object.values(facets.status).reduce((sum, requests) => sum + requests, 0) : total }
}
