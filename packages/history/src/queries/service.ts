/**
 * The history API's answers (mounted by the gateway under /api/adaptive-routing/history):
 * issues and one issue (reference: "Listing incidents through the API"), and what the
 * dashboard draws: a window's summary, the timeline, and a route's score series per node.
 * Shapes are documented in docs/api.md.
 */
import type pg from 'pg'
import type { GroupOptions, GroupedIncident } from '../incidents/group.ts'
import { createIncidentSource } from './incidents.ts'
import { answerIssues, keyNamesOf, parseIssueFilters, type IssuesAnswer } from './issues.ts'
import { HistoryQueryError, list, parseWindow, windowTimes } from './params.ts'
import { loadChanges, loadEvents, settingsAt } from './read.ts'
import { directionEntity, keyEntity, routeEntity } from '../entities.ts'
import { buildTimeline, readTimelineCells, round } from './timeline.ts'
import { sumCounts } from './counts.ts'

/** What the queries need. */
interface HistoryQueriesComponents {
  pool: pg.Pool
  now: () => number
  keyName: (provider: string, keyId: string) => string | undefined
  /** The settings in force now (the five switches and history's own). */
  settings: () => Record<string, unknown>
}

/** Tuning of the statuses (tests shorten them). */
type HistoryQueriesInit = Pick<GroupOptions, 'lostAfterMs' | 'waitingAfterMs'>

/** How far before an incident edits and settings changes count as recent changes. */
const RECENT_BEFORE_MS = 30 * 60_000

/** The history queries. Every method reads Postgres; none keeps state, so every node answers the same. */
export function createHistoryQueries(components: HistoryQueriesComponents, init: HistoryQueriesInit = {}) {
  const { pool, now, keyName } = components
  const incidents = createIncidentSource(pool)
  // Every incident history holds (queries pick those of their window), grouped once and kept: only the open tail is grouped per query.
  const grouped = (at: number): Promise<GroupedIncident[]> => incidents.grouped({ now: at, lostAfterMs: init.lostAfterMs, waitingAfterMs: init.waitingAfterMs, keyName })

  return {
    /** `GET .../history/issues`. */
    async issues(query: URLSearchParams): Promise<IssuesAnswer> {
      const at = now()
      const window = parseWindow(query, at)
      const filters = parseIssueFilters(query)
      return answerIssues(await grouped(at), filters, window, keyName)
    },

    /** `GET .../history/issues/:id`, the incident with its detail (design.md: `events`, `recent_changes`, `settings_in_effect`, `impacted_nodes`); null when no incident of the window (default: 7 days) has that id. */
    async issue(id: string, query: URLSearchParams) {
      const at = now()
      const window = parseWindow(query, at, 7 * 86_400_000)
      const found = (await grouped(at)).find((item) => item.incident.id === id && item.openedMs <= window.to && (item.closedMs === null || item.closedMs >= window.from))
      if (found === undefined) return null
      const incident = found.incident
      const end = found.closedMs ?? at
      const entities = new Set<string>(found.episodes.map((episode) => episode.entity))
      for (const keyId of incident.key_ids) {
        entities.add(keyEntity(incident.provider, keyId))
        for (const model of incident.models) entities.add(routeEntity(incident.provider, model, keyId))
      }
      for (const model of incident.models) entities.add(directionEntity(incident.provider, model))
      const [events, changes, atOpen] = await Promise.all([
        loadEvents(pool, [...entities], found.openedMs - 60_000, end + 60_000),
        loadChanges(pool, incident.provider, found.openedMs - RECENT_BEFORE_MS, end),
        settingsAt(pool, found.openedMs),
      ])
      const nowSettings = components.settings()
      const impacted = new Map<string, { node_id: string; region: string; saw_refusal: boolean }>()
      for (const episode of found.episodes) {
        const seen = impacted.get(episode.nodeId)
        const sawIt = episode.cause === 'hold' ? episode.sawRefusal : true
        if (seen === undefined) impacted.set(episode.nodeId, { node_id: episode.nodeId, region: episode.region, saw_refusal: sawIt })
        else seen.saw_refusal ||= sawIt
      }
      return {
        ...incident,
        events,
        recent_changes: changes,
        settings_in_effect: { at_open: atOpen ?? nowSettings, now: nowSettings },
        impacted_nodes: [...impacted.values()].sort((a, b) => a.node_id.localeCompare(b.node_id)),
        checks_list: events
          .filter((event) => event.kind === 'hold:checked' || (event.kind === 'hold:released' && event.by === 'check' && event.origin === 'local'))
          .map((event) => ({ at: event.at, node_id: event.node_id, outcome: event.kind === 'hold:checked' ? String(event.outcome) : 'served' })),
        failed_requests: events
          .filter((event) => event.kind === 'request:failed')
          .map((event) => ({ at: event.at, node_id: event.node_id, pinned: event.pinned === true, kept_on_failing: event.kept_on_failing === true, failure_class: (event.failure_class as string | null) ?? null })),
        key_names: keyNamesOf([incident], keyName),
        provider_message: latestMessage(found.episodes),
      }
    },

    /** `GET .../history/summary`: the dashboard's four figures for a window. */
    async summary(query: URLSearchParams) {
      const at = now()
      const window = parseWindow(query, at)
      // The incidents and the counts at once; the counts come mostly from their rollups (counts.ts).
      const [grouping, sums] = await Promise.all([grouped(at), sumCounts(pool, window)])
      const incidents = answerIssues(grouping, { sort: 'priority', page: null }, window, keyName).issues
      const { served, failed, kept_failing, redirected, fallback_served, routing_picked, caller_named, checks } = sums
      const share = routing_picked + caller_named === 0 ? null : routing_picked / (routing_picked + caller_named)
      return {
        ...windowTimes(window),
        incidents: { total: incidents.length, attention: incidents.filter((incident) => incident.status === 'attention').length, ongoing: incidents.filter((incident) => incident.closed_at === null).length },
        requests: { served, failed, failed_avoidable: kept_failing, saved: redirected + fallback_served, redirected, fallback_served, routing_picked, caller_named, routing_picked_share: share, checks },
      }
    },

    /** `GET .../history/timeline`: per provider+model rows with key rows, bucketed worst states. */
    async timeline(query: URLSearchParams) {
      const at = now()
      const window = parseWindow(query, at)
      const bucketValue = query.get('bucket_seconds')
      const span = window.to - window.from
      let bucketSeconds = Math.max(60, Math.ceil(span / 60 / 60_000) * 60)
      if (bucketValue !== null && bucketValue !== '') {
        const parsed = Number(bucketValue)
        if (!Number.isInteger(parsed) || parsed < 1) throw new HistoryQueryError('bucket_seconds', `bucket_seconds must be a positive whole number (got "${bucketValue}").`)
        bucketSeconds = Math.max(parsed, Math.ceil(span / 1000 / 1000))
      }
      const filters = { providers: list(query, 'providers') ?? null, models: list(query, 'models') ?? null }
      // The cells and the incidents at once: the rollups make the cells a small read (timeline.ts).
      const [cells, grouping] = await Promise.all([readTimelineCells(pool, window, bucketSeconds, filters), grouped(at)])
      const incidents = answerIssues(grouping, { sort: 'oldest', page: null }, window, keyName).issues
      return {
        ...windowTimes(window),
        bucket_seconds: bucketSeconds,
        rows: buildTimeline(cells, bucketSeconds, keyName),
        incidents: incidents.map((incident) => ({ id: incident.id, entity: incident.entity, status: incident.status, opened_at: incident.opened_at, closed_at: incident.closed_at })),
      }
    },

    /** `GET .../history/scores?entity=route:p:m:k`: the route's score and its parts, per node. */
    async scores(query: URLSearchParams) {
      const at = now()
      const window = parseWindow(query, at)
      const entity = query.get('entity')
      if (entity === null || !/^(route|direction):/.test(entity)) throw new HistoryQueryError('entity', 'entity is required: a route (route:provider:model:key_id) or a direction (direction:provider:model).')
      const result = await pool.query<{ at: Date; node_id: string; region: string; state: string; held: boolean; weight: number; score: number; error_penalty: number; latency_penalty: number; utilisation: number; recovery: number; requests: number; errors: number; latency_ms: number | null }>(
        `SELECT at, node_id, region, state, held, weight, score, error_penalty, latency_penalty, utilisation, recovery, requests, errors, latency_ms
           FROM history_snapshots WHERE entity = $1 AND at >= $2 AND at <= $3 ORDER BY node_id, at LIMIT 50000`,
        [entity, new Date(window.from), new Date(window.to)],
      )
      const series = new Map<string, { node_id: string; region: string; points: Record<string, unknown>[] }>()
      for (const row of result.rows) {
        let node = series.get(row.node_id)
        if (node === undefined) series.set(row.node_id, (node = { node_id: row.node_id, region: row.region, points: [] }))
        node.points.push({ at: row.at.toISOString(), score: round(row.score), weight: round(row.weight), state: row.state, held: row.held, error_penalty: round(row.error_penalty), latency_penalty: round(row.latency_penalty), utilisation: round(row.utilisation), recovery: round(row.recovery), requests: row.requests, errors: row.errors, latency_ms: row.latency_ms === null ? null : Math.round(row.latency_ms) })
      }
      return { entity, ...windowTimes(window), series: [...series.values()] }
    },
  }
}

/** The queries' type. */
export type HistoryQueries = ReturnType<typeof createHistoryQueries>

/** The provider's words of the latest evidence: the hold whose current reason was seen last (issue 36, item 5). */
function latestMessage(episodes: readonly GroupedIncident['episodes'][number][]): string | null {
  let found: GroupedIncident['episodes'][number] | undefined
  for (const episode of episodes) {
    if (episode.message === null) continue
    if (found === undefined || (episode.reasonAt ?? episode.updatedAt) >= (found.reasonAt ?? found.updatedAt)) found = episode
  }
  return found?.message ?? null
}
