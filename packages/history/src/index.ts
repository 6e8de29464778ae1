/**
 * @switchboard/history — what routing saw and did.
 *
 * Recorders (batched, bounded, drops counted) for routing events, per-minute
 * snapshots and request counts, and the request log; incident grouping (pure:
 * events in, incidents out, time injected); the queries behind the history and
 * request-log APIs. Tables live in the config store's database, partitioned by day.
 */

/** A batched, bounded writer off the request path: `add` never waits; when Postgres lags the oldest rows are dropped and counted. */
export { createBatchWriter, type BatchWriter, type BatchWriterInit, type BatchWriterStats } from './writer/batch-writer.ts'
/** One multi-row INSERT (`unnest` of one array per column) for a writer's batch. */
export { insertRows, type Column } from './writer/insert.ts'
/** Day partitions: create upcoming days ahead, drop whole days past retention. */
export { createDayPartitions, dropDayPartitionsBefore, listPartitionNames, retentionCutoff, dayName, dayStart } from './partitions/day-partitions.ts'
/** Entity keys: `route:provider:model:key_id`, `direction:provider:model`, `key:provider:key_id`. */
export { routeEntity, directionEntity, keyEntity, holdEntity, scopeOf, type Scope } from './entities.ts'
/** One node's history, pure: holds, route states and requests in; events, episodes, snapshots and counts out. */
export { NodeTracker, directionState, type HoldView, type TrackerOutput } from './tracker/tracker.ts'
/** One request's part in the per-minute counts, from a plain record of how it went. */
export { countRequest, type RequestOutcome, type AttemptView, type RequestCounting } from './tracker/requests.ts'
/** The shapes history records. */
export type { Episode, HistoryEvent, EventKind, RouteView, SnapshotRow, CountRow, DirectionCounts, Action, Phase, ReleaseBy } from './tracker/types.ts'
/** The recorder of one node: the tracker's output written by batch writers, snapshots each minute. */
export { startHistoryRecorder, type HistoryRecorder, type HistoryRecorderComponents, type HistoryRecorderInit } from './recorder/recorder.ts'
/** Daily retention: drops whole day partitions past `history_retention_days`. */
export { runRetention } from './recorder/retention.ts'
/** Incidents: every node's episodes grouped into one incident per problem, with the reference's statuses. */
export { groupIncidents, incidentId, type Incident, type IncidentStatus, type StoredEpisode, type NodeLiveness, type GroupedIncident, type GroupOptions } from './incidents/group.ts'
/** The issues list: filters, facets, sort and paging of the reference, pure. */
export { answerIssues, parseIssueFilters, summarise, type IssueFilters, type IssuesAnswer, type MatchedSummary } from './queries/issues.ts'
/** The history API's answers: issues, one issue, summary, timeline, score series. */
export { createHistoryQueries, type HistoryQueries, type IssueDetail } from './queries/service.ts'
/** A query parameter the history API refuses (400). */
export { HistoryQueryError } from './queries/params.ts'
/** `history_enabled` and `history_retention_days`: read, checked, saved (API wins over config.json). */
export { readHistorySettings, writeHistorySettings, checkHistorySettings, defaultHistorySettings, MAX_RETENTION_DAYS, type HistorySettings } from './settings.ts'
export * from './request-log/index.ts'
