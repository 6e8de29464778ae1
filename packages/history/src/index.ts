/**
 * @switchboard/history — what routing saw and did.
 *
 * Recorders (batched, bounded, drops counted) for routing events, per-minute
 * snapshots and request counts, and the request log; incident grouping (pure:
 * events in, incidents out, time injected); the queries behind the history and
 * request-log APIs. Tables live in the config store's database, partitioned by day.
 */

export * from './request-log/index.ts'
