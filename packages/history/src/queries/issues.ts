/**
 * `GET /api/adaptive-routing/history/issues`, pure: the window's incidents in, the answer out
 * (reference: "Listing incidents through the API"; design.md for the field names). Without
 * `limit` and `offset` every issue of the window; with either, a filtered, sorted page with
 * `total, offset, limit, matched_summary, facets, key_names`.
 */
import type { GroupedIncident, Incident, IncidentStatus } from '../incidents/group.ts'
import { HistoryQueryError, enumList, list, windowTimes } from './params.ts'

const STATUSES = ['attention', 'recovering', 'mitigated', 'waiting', 'resolved', 'unobserved'] as const satisfies readonly IncidentStatus[]
export const STATES = ['degraded', 'failed', 'recovering', 'healthy'] as const
export const SCOPES = ['route', 'direction', 'key'] as const
const SORTS = ['priority', 'newest', 'oldest', 'longest', 'shortest'] as const
type IssueSort = (typeof SORTS)[number]

/** Default and fallback page size, and the largest (reference). */
export const DEFAULT_LIMIT = 25
export const MAX_LIMIT = 100

/** The filters that take any values. */
const LISTS = ['ids', 'reasons', 'providers', 'models', 'regions', 'nodes', 'entities'] as const

/** The parsed filters of an issues query. */
export type IssueFilters = Partial<Record<(typeof LISTS)[number], string[]>> & {
  statuses?: IncidentStatus[]
  states?: string[]
  scopes?: string[]
  search?: string
  sort: IssueSort
  /** Null without limit and offset: the whole list. */
  page: { limit: number; offset: number } | null
}

/** Parses the filters, sort and page; throws `HistoryQueryError` for what the reference answers with 400. */
export function parseIssueFilters(query: URLSearchParams): IssueFilters {
  const sortValue = query.get('sort')
  const sort = sortValue === null || sortValue === '' ? 'priority' : sortValue
  if (!(SORTS as readonly string[]).includes(sort)) throw new HistoryQueryError('sort', `sort must be one of ${SORTS.join(', ')} (got "${sortValue}").`)
  const limitValue = query.get('limit')
  const offsetValue = query.get('offset')
  let page: IssueFilters['page'] = null
  if (limitValue !== null || offsetValue !== null) {
    // Limit: default and fallback 25, at most 100 (reference).
    const parsedLimit = limitValue === null ? NaN : Number(limitValue)
    const limit = Number.isInteger(parsedLimit) && parsedLimit > 0 ? Math.min(parsedLimit, MAX_LIMIT) : DEFAULT_LIMIT
    const offset = offsetValue === null || offsetValue === '' ? 0 : Number(offsetValue)
    if (!Number.isInteger(offset)) throw new HistoryQueryError('offset', `offset must be a whole number of issues to skip (got "${offsetValue}").`)
    if (offset < 0) throw new HistoryQueryError('offset', `offset must not be negative (got ${offset}).`)
    page = { limit, offset }
  }
  const filters: IssueFilters = { sort: sort as IssueSort, page }
  const assign = <K extends keyof IssueFilters>(key: K, value: IssueFilters[K] | undefined) => {
    if (value !== undefined) filters[key] = value
  }
  for (const name of LISTS) assign(name, list(query, name))
  assign('statuses', enumList(query, 'statuses', STATUSES))
  assign('states', enumList(query, 'states', STATES))
  assign('scopes', enumList(query, 'scopes', SCOPES))
  const search = query.get('search')?.trim()
  if (search) filters.search = search.toLowerCase()
  return filters
}

/** The answer: `issues`, plus the page fields when paged. */
export interface IssuesAnswer {
  from: string
  to: string
  issues: Incident[]
  total?: number
  offset?: number
  limit?: number
  matched_summary?: ReturnType<typeof summarise>
  facets?: Record<string, Record<string, number>>
  key_names?: Record<string, string>
}

/** Facets the sidebar shows, each a field of the incident (and a filter of the same name). */
const FACETS = {
  statuses: (incident: Incident) => [incident.status],
  states: (incident: Incident) => [incident.worst_state],
  scopes: (incident: Incident) => [incident.scope],
  reasons: (incident: Incident) => incident.reasons,
  providers: (incident: Incident) => [incident.provider],
  models: (incident: Incident) => incident.models,
  regions: (incident: Incident) => incident.regions,
  nodes: (incident: Incident) => incident.nodes,
} satisfies Record<string, (incident: Incident) => readonly string[]>
const FACET_ENTRIES = Object.entries(FACETS)

/** Answers an issues query over the window's incidents. */
export function answerIssues(
  grouped: readonly GroupedIncident[],
  filters: IssueFilters,
  window: { from: number; to: number },
  keyName: (provider: string, keyId: string) => string | undefined,
): IssuesAnswer {
  const inWindow = grouped.filter((item) => item.openedMs <= window.to && (item.closedMs === null || item.closedMs >= window.from))
  const matched = inWindow.filter((item) => matches(item, filters, keyName))
  sortIssues(matched, filters.sort)
  const base = windowTimes(window)
  if (filters.page === null) return { ...base, issues: matched.map((item) => item.incident) }
  const { limit } = filters.page
  const total = matched.length
  // Past the end (no issue left to show): the last page (reference). An offset inside the list is kept as given, aligned or not.
  const lastPageOffset = total === 0 ? 0 : Math.floor((total - 1) / limit) * limit
  const offset = filters.page.offset >= total ? lastPageOffset : filters.page.offset
  const page = matched.slice(offset, offset + limit).map((item) => item.incident)
  return {
    ...base,
    issues: page,
    total,
    offset,
    limit,
    matched_summary: summarise(matched.map((item) => item.incident)),
    facets: facets(inWindow.map((item) => item.incident)),
    key_names: keyNamesOf(page, keyName),
  }
}

/** The names of the incidents' keys, by key id (the id where no name is known). */
export function keyNamesOf(incidents: readonly Incident[], keyName: (provider: string, keyId: string) => string | undefined): Record<string, string> {
  const names: Record<string, string> = {}
  for (const incident of incidents) for (const keyId of incident.key_ids) names[keyId] = keyName(incident.provider, keyId) ?? keyId
  return names
}

function matches(item: GroupedIncident, filters: IssueFilters, keyName: (provider: string, keyId: string) => string | undefined): boolean {
  const incident = item.incident
  const anyOf = (wanted: readonly string[] | undefined, values: readonly string[]) => wanted === undefined || values.some((value) => wanted.includes(value))
  if (!anyOf(filters.ids, [incident.id])) return false
  for (const [name, values] of FACET_ENTRIES) if (!anyOf(filters[name as keyof typeof FACETS], values(incident))) return false
  if (filters.entities !== undefined && !anyOf(filters.entities, [incident.entity, ...item.episodes.map((episode) => episode.entity)])) return false
  if (filters.search !== undefined) {
    const needle = filters.search
    const haystack = [incident.id, incident.provider, ...incident.models, ...incident.key_ids, ...incident.key_ids.map((keyId) => keyName(incident.provider, keyId) ?? '')]
    if (!haystack.some((value) => value.toLowerCase().includes(needle))) return false
  }
  return true
}

function sortIssues(items: GroupedIncident[], sort: IssueSort): void {
  const newest = (a: GroupedIncident, b: GroupedIncident) => b.openedMs - a.openedMs || a.incident.id.localeCompare(b.incident.id)
  const compare: Record<IssueSort, (a: GroupedIncident, b: GroupedIncident) => number> = {
    priority: (a, b) => Number(b.incident.status === 'attention') - Number(a.incident.status === 'attention') || newest(a, b),
    newest,
    oldest: (a, b) => -newest(a, b),
    longest: (a, b) => b.incident.duration_seconds - a.incident.duration_seconds || newest(a, b),
    shortest: (a, b) => a.incident.duration_seconds - b.incident.duration_seconds || newest(a, b),
  }
  items.sort(compare[sort])
}

/** The summary of the matching issues (reference: `matched_summary`): counts over every match; waiting and unobserved are not confirmed recovered, so not in the median. */
export function summarise(incidents: readonly Incident[]) {
  const resolvedDurations = incidents.filter((incident) => incident.status === 'resolved').map((incident) => incident.duration_seconds).sort((a, b) => a - b)
  const ongoing = incidents.filter((incident) => incident.closed_at === null)
  return {
    attention: incidents.filter((incident) => incident.status === 'attention').length,
    ongoing: ongoing.length,
    resolved: resolvedDurations.length,
    median_resolve_seconds: median(resolvedDurations),
    longest_ongoing_seconds: ongoing.length === 0 ? null : Math.max(...ongoing.map((incident) => incident.duration_seconds)),
    pinned_kept_failed: incidents.reduce((sum, incident) => sum + incident.pinned_kept_failed, 0),
  }
}

function median(sorted: readonly number[]): number | null {
  if (sorted.length === 0) return null
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

function facets(incidents: readonly Incident[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {}
  for (const [name, values] of FACET_ENTRIES) {
    const counts: Record<string, number> = {}
    for (const incident of incidents) for (const value of new Set(values(incident))) counts[value] = (counts[value] ?? 0) + 1
    out[name] = counts
  }
  return out
}
