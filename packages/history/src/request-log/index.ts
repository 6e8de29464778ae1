/**
 * The request log (issue 15): every inference request with its routing summary, written in
 * batches to day-partitioned Postgres tables and searchable through `GET /api/logs`.
 */
export type { CheckOutcome, RecordedAttempt, RecordedUsage, RequestRecord, RequestRecordListener, RequestSurface, RoutingSummary, SkippedKeyRecord } from './record.ts'
export { isRequestId, newRequestId, requestIdTime } from './id.ts'
