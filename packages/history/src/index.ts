/**
 * @switchboard/history — what routing saw and did.
 *
 * Recorders (batched, bounded, drops counted) for routing events, per-minute
 * snapshots and request counts, and the request log; incident grouping (pure:
 * events in, incidents out, time injected); the queries behind the history and
 * request-log APIs. Tables live in the config store's database, partitioned by day.
 */

/** One multi-row INSERT (`unnest` of one array per column) for a writer's batch. */
export { insertRows } from './writer/insert.ts'
/** Day partitions, made ahead of time. */
export { createDayPartitions } from './partitions/day-partitions.ts'
/** Entity keys: `route:provider:model:key_id`, `direction:provider:model`, `key:provider:key_id`. */
export { keyEntity } from './entities.ts'
/** One node's history, pure: holds, route states and requests in; events, episodes, snapshots and counts out. */
export { NodeTracker } from './tracker/tracker.ts'
export type { RequestOutcome } from './tracker/requests.ts'
/** The shapes history records. */
export type { Episode, HistoryEvent, RouteView } from './tracker/types.ts'
/** The recorder of one node: the tracker's output written by batch writers, snapshots each minute. */
export { startHistoryRecorder, type HistoryRecorder } from './recorder/recorder.ts'
/** Daily retention: drops whole day partitions past `history_retention_days`. */
export { runRetention } from './recorder/retention.ts'
/** The issues list: filters, facets, sort and paging of the reference, pure. */
export { answerIssues, parseIssueFilters, type IssuesAnswer } from './queries/issues.ts'
/** The history API's answers: issues, one issue, summary, timeline, score series. */
export { createHistoryQueries, type HistoryQueries } from './queries/service.ts'
/** A query parameter the history or request-log API refuses (400). */
export { HistoryQueryError } from './queries/params.ts'
/** `history_enabled` and `history_retention_days`: read and saved (API wins over config.json). */
export { readHistorySettings, writeHistorySettings, defaultHistorySettings, type HistorySettings } from './settings.ts'

/** The request log (issue 15): every inference request with its routing summary, written in batches to day-partitioned tables and searchable through `GET /api/logs`. */
export type { RecordedAttempt, RecordedUsage, RequestRecord, RequestRecordListener, RequestSurface, RoutingSummary } from './request-log/record.ts'
export { newRequestId } from './request-log/id.ts'
export { createRequestLog, type RequestLog, type RequestLogComponents } from './request-log/request-log.ts'
export { historyLink, parseLogQuery, readLog, searchLogs, type LogPage, type LogQuery } from './request-log/query.ts'
