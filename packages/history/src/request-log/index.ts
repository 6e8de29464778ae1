/**
 * The request log (issue 15): every inference request with its routing summary, written in
 * batches to day-partitioned Postgres tables and searchable through `GET /api/logs`.
 */
export type { CheckOutcome, RecordedAttempt, RecordedUsage, RequestRecord, RequestRecordListener, RequestSurface, RoutingSummary, SkippedKeyRecord } from './record.ts'
export { isRequestId, newRequestId, requestIdTime } from './id.ts'
export { createRequestLog, type RequestLog, type RequestLogComponents, type RequestLogInit } from './request-log.ts'
export { REQUEST_LOG_TABLE } from './rows.ts'
export type { LogFacets } from './counts.ts'
export {
  DEFAULT_LOG_LIMIT,
  DEFAULT_LOG_WINDOW_MS,
  LOG_FAILURE_CLASSES,
  LOG_SORTS,
  MAX_LOG_LIMIT,
  RequestLogQueryError,
  historyLink,
  parseLogQuery,
  readLog,
  searchLogs,
  type HistoryLink,
  type LogPage,
  type LogQuery,
  type LogSort,
} from './query.ts'
