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
export * from './request-log/index.ts'
