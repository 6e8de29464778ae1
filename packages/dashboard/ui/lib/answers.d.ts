// The admin API's answers as the pages read them: only the fields a page uses, for the type
// check of the ui's JSDoc (tsconfig.json beside ui/). Nothing here is served or run; the API's
// own shapes live with the gateway and history packages, and the browser tests hold the two
// together.

import type { FailureClass, RouteState } from '@switchboard/routing'

/** A route's state, as every page colours it. */
export type { RouteState }

/** GET /api/session */
export interface SessionAnswer {
  role: 'view' | 'update' | null
  permissions?: string[]
  tokens_required?: boolean
}

/** One hold of GET /api/adaptive-routing/conditions. */
export interface HoldEntry {
  provider: string
  key_id: string
  key_name?: string
  /** null: the whole key. */
  model: string | null
  reason: string
  message: string
  rung: number
  checks: number
  since: string
  next_check_at: string
}

/** GET /api/adaptive-routing/conditions */
export interface ConditionsAnswer {
  count: number
  conditions: HoldEntry[]
}

/** One route of GET /api/adaptive-routing/routes. */
export interface RouteEntry {
  provider: string
  model: string
  key_id: string
  key_name: string
  state: RouteState
  held: boolean
  weight: number
  expected_share: number | null
  actual_share: number | null
  error_rate: number | null
  latency_ms: number | null
  in_flight: number
}

/** GET /api/adaptive-routing/routes */
export interface RoutesAnswer {
  routes: RouteEntry[]
}

/** GET /api/adaptive-routing/history/summary */
export interface SummaryAnswer {
  incidents: { total: number; attention: number; ongoing: number }
  requests: {
    saved: number
    redirected: number
    fallback_served: number
    served: number
    failed: number
    failed_avoidable: number
    checks: number
    routing_picked: number
    caller_named: number
    routing_picked_share: number | null
  }
}

/** One stretch of a timeline row: the worst state any node saw in it. */
export interface TimelineBucket {
  at: string
  state: RouteState
  held: boolean
  /** The share of the reporting nodes that saw `state`. */
  share: number
  nodes: number
  requests?: number
  failed?: number
}

/** A key row of the timeline. */
export interface TimelineKeyRow {
  entity: string
  key_id: string
  key_name: string
  buckets: TimelineBucket[]
}

/** A provider + model row of the timeline. */
export interface TimelineRow {
  entity: string
  provider: string
  model: string
  buckets: TimelineBucket[]
  keys: TimelineKeyRow[]
}

/** An incident as the timeline's lane draws it. */
export interface LaneIncident {
  id: string
  entity: string
  status: string
  opened_at: string
  closed_at: string | null
}

/** GET /api/adaptive-routing/history/timeline */
export interface TimelineAnswer {
  from: string
  to: string
  bucket_seconds: number
  rows: TimelineRow[]
  incidents: LaneIncident[]
}

/** One incident of GET .../history/issues. */
export interface IncidentEntry {
  id: string
  status: string
  provider: string
  models: string[]
  key_ids: string[]
  reasons: string[]
  worst_state: RouteState
  action: string
  checks: number
  opened_at: string
  closed_at: string | null
  duration_seconds: number | null
}

/** GET .../history/issues (paged). */
export interface IssuesAnswer {
  issues: IncidentEntry[]
  total: number
  offset: number
  limit: number
  matched_summary: {
    attention: number
    ongoing: number
    resolved: number
    median_resolve_seconds: number | null
    longest_ongoing_seconds: number | null
  }
  facets: Record<string, Record<string, number>>
  key_names: Record<string, string>
}

/** One history event (GET .../history/issues/:id `events` and `recent_changes`); fields by kind. */
export interface HistoryEventEntry {
  kind: string
  at: string
  node_id: string
  region?: string
  entity?: string
  provider?: string
  model?: string | null
  key_id?: string | null
  key_name?: string
  origin?: string
  reason?: string
  message?: string
  wait_ms?: number | null
  outcome?: string
  by?: string
  from?: string
  to?: string
  failure_class?: FailureClass | null
  pinned?: boolean
  named_provider?: string | null
  kept_on_failing?: boolean
  created?: boolean
  fields?: string[]
  before?: Record<string, unknown>
  after?: Record<string, unknown>
  [field: string]: unknown
}

/** GET .../history/issues/:id */
export interface IncidentDetailAnswer extends IncidentEntry {
  key_names: Record<string, string>
  checks_list: { outcome: string }[]
  requests_failed: number
  failed_requests: { pinned: boolean }[]
  nodes: string[]
  regions: string[]
  provider_message: string | null
  what_would_help: string | null
  events: HistoryEventEntry[]
  recent_changes: HistoryEventEntry[]
  settings_in_effect: { at_open: Record<string, unknown>; now: Record<string, unknown> }
  impacted_nodes: { node_id: string; region: string; saw_refusal: boolean }[]
}

/** One entry of GET /api/logs (and GET /api/logs/:id). */
export interface LogEntry {
  id: string
  at: string
  node_id: string
  region: string
  requested: { provider: string | null; model: string; fallbacks: string[]; session_id: string | null }
  served: { provider: string | null; model: string | null; key_id: string | null; key_name: string | null }
  status: number
  failure_class: FailureClass | null
  message: string | null
  latency_ms: number
  ttft_ms: number | null
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null
  stream: boolean
  attempts: { provider: string; model: string; key_name: string; status: number; failure_class: FailureClass | null; latency_ms: number }[]
  routing: {
    picked_by: string
    moved_off: { provider: string; reason: string } | null
    pinned_kept_failed?: boolean
    skipped_keys: { key_name: string; provider: string; model: string; reason: string }[]
    check: { key_name: string; provider: string; model: string; outcome: string } | null
    added_fallback_served: boolean
    session_kept: boolean | null
    log: string[]
  }
  /** Where the request sits in routing history (GET /api/logs/:id only). */
  history?: { from: number | string; to: number | string; entities: string[] }
}

/** GET /api/logs */
export interface LogsAnswer {
  logs: LogEntry[]
  total: number
  offset: number
  facets: Record<string, Record<string, number>>
  key_names?: Record<string, string>
  request_log_enabled?: boolean
}

/** One node's points of GET .../history/scores. */
export interface ScoreSeries {
  node_id: string
  points: ScorePoint[]
}

/** One snapshot of a route's score on one node. */
export interface ScorePoint {
  at: string
  state: RouteState
  held: boolean
  score: number
  weight: number
  error_penalty: number
  latency_penalty: number
  utilisation: number
  recovery: number
  requests: number
  errors: number
}

/** GET .../history/scores */
export interface ScoresAnswer {
  series: ScoreSeries[]
}

/** GET /api/cluster */
export interface ClusterAnswer {
  mode: 'fleet' | 'standalone'
  node: { node_id: string }
  members: { node_id: string; region: string; since: string; last_seen: string; addresses: string[] }[]
  regions: Record<string, string[]>
  leaders: Record<string, string>
  holds: number
  last_snapshot: { taken_at: string; node_id: string; entries: number } | null
  dropped: Record<string, number>
  /** The fleet's own health as the node sees it (absent from a worker that does not join the fleet). */
  signals?: FleetSignals
}

/** How fast one kind of change reaches the node: the latest lags' quantiles (ms). */
export interface PropagationFigures {
  count: number
  p50_ms: number | null
  p99_ms: number | null
  max_ms: number | null
}

/** GET /api/cluster's `signals`. */
export interface FleetSignals {
  propagation: { hold: PropagationFigures; release: PropagationFigures; settings: PropagationFigures }
  repaired: { 'anti-entropy': number; 'sync on join': number }
  gossip: Record<string, { in: number; out: number; dropped: number }>
  snapshot_age_s: number | null
  clock_offset_max_ms: number
}

/** One key of a provider, as GET /api/providers sends it (value redacted). */
export interface ProviderKey {
  id?: string
  name: string
  value: string
  models: string[]
  weight: number
}

/** One provider of GET /api/providers (config.json's providers.<name>, with its name). */
export interface ProviderEntry {
  name: string
  type: string
  keys: ProviderKey[]
  network_config?: { base_url?: string; [setting: string]: unknown }
  custom_provider_config?: Record<string, unknown>
  [setting: string]: unknown
}

/** GET /api/providers */
export interface ProvidersAnswer {
  providers: ProviderEntry[]
}

/** GET /api/adaptive-routing/config: the five switches, and whatever else this node reports. */
export type ConfigAnswer = Record<string, unknown> & { pending?: boolean }
