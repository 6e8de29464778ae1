/**
 * The `detail` column of `request_log` (the baseline migration): only what the row's other columns do
 * not already hold, as a JSON array by position. The log entry the API answers is the columns and this array put
 * back together (`recordOfRow`). Written at request rate, a row's bytes are paid three times
 * (encoded by the gateway, sent, parsed and stored by Postgres); the whole record as a JSON
 * object was twice the bytes, half of them key names and values already in columns.
 *
 * Layout, version 1 (`rows.ts` `encodeRow` writes it byte by byte; rows.test.ts holds it to
 * JSON.stringify of the same array built as plain values):
 *
 *   [1, fallbacks[], message, ttft_ms, usage [prompt, completion, total] | null,
 *    attempts [[provider, model, key_id, key_name, status, failure_class, latency_ms, wait_hint_ms]],
 *    moved_off [provider, reason] | null, skipped_keys [[provider, model, key_id, key_name, reason]],
 *    check [key_id, key_name, provider, model, outcome] | null, session_kept, pinned_kept_failed,
 *    log[], content [request, response, truncated] | null]
 *
 * A row written before this layout has no `detail` but the whole record as a JSON object in
 * `entry`, read as it is.
 */
import type { CheckOutcome, RecordedAttempt, RequestRecord, RoutingSummary } from './record.ts'

/** The layout's version, its first element. */
export const ENTRY_VERSION = 1

type Usage = [prompt: number, completion: number, total: number]
type Attempt = [provider: string, model: string, keyId: string, keyName: string, status: number, failureClass: RecordedAttempt['failure_class'], latencyMs: number, waitHintMs: number | null]
type SkippedKey = [provider: string, model: string, keyId: string, keyName: string, reason: string]
type Check = [keyId: string, keyName: string, provider: string, model: string, outcome: CheckOutcome]

/** The `detail` column's array. */
export type CompactEntry = [
  version: typeof ENTRY_VERSION,
  fallbacks: string[],
  message: string | null,
  ttftMs: number | null,
  usage: Usage | null,
  attempts: Attempt[],
  movedOff: [provider: string, reason: string] | null,
  skippedKeys: SkippedKey[],
  check: Check | null,
  sessionKept: boolean | null,
  pinnedKeptFailed: boolean,
  log: string[],
  content: [request: string | null, response: string | null, truncated: boolean] | null,
]

/** The columns a log entry is read from, as pg returns them. */
export interface EntryRow {
  at: Date
  id: string
  node_id: string
  region: string
  surface: string
  gateway_key: string | null
  requested_provider: string | null
  requested_model: string
  session_id: string | null
  served_provider: string | null
  served_model: string | null
  served_key_id: string | null
  served_key_name: string | null
  status: number
  failure_class: RequestRecord['failure_class']
  latency_ms: number
  stream: boolean
  picked_by: RoutingSummary['picked_by']
  added_fallback_served: boolean
  /** `CompactEntry` (`detail`), or the whole record (`entry` of a row written before `detail` existed). */
  entry: unknown
}

/** The select list of `EntryRow`: `detail` read as JSON (parsed by pg), else the old row's `entry`. */
export const ENTRY_COLUMNS =
  'at, id, node_id, region, surface, gateway_key, requested_provider, requested_model, session_id, served_provider, served_model, ' +
  'served_key_id, served_key_name, status, failure_class, latency_ms, stream, picked_by, added_fallback_served, coalesce(detail::json, entry) AS entry'

/** The log entry of one row: its columns and its entry array put back together, in the record's key order. */
export function recordOfRow(row: EntryRow): RequestRecord {
  if (!Array.isArray(row.entry)) return row.entry as RequestRecord
  const [, fallbacks, message, ttftMs, usage, attempts, movedOff, skippedKeys, check, sessionKept, pinnedKeptFailed, log, content] = row.entry as CompactEntry
  return {
    id: row.id,
    at: row.at.toISOString(),
    node_id: row.node_id,
    region: row.region,
    surface: row.surface,
    gateway_key: row.gateway_key,
    requested: { provider: row.requested_provider, model: row.requested_model, fallbacks, session_id: row.session_id },
    served: { provider: row.served_provider, model: row.served_model, key_id: row.served_key_id, key_name: row.served_key_name },
    status: row.status,
    failure_class: row.failure_class,
    message,
    latency_ms: row.latency_ms,
    ttft_ms: ttftMs,
    usage: usage === null ? null : { prompt_tokens: usage[0], completion_tokens: usage[1], total_tokens: usage[2] },
    stream: row.stream,
    attempts: attempts.map(([provider, model, keyId, keyName, status, failureClass, latencyMs, waitHintMs]) => ({
      provider,
      model,
      key_id: keyId,
      key_name: keyName,
      status,
      failure_class: failureClass,
      latency_ms: latencyMs,
      wait_hint_ms: waitHintMs,
    })),
    routing: {
      picked_by: row.picked_by,
      moved_off: movedOff === null ? null : { provider: movedOff[0], reason: movedOff[1] },
      skipped_keys: skippedKeys.map(([provider, model, keyId, keyName, reason]) => ({ provider, model, key_id: keyId, key_name: keyName, reason })),
      check: check === null ? null : { key_id: check[0], key_name: check[1], provider: check[2], model: check[3], outcome: check[4] },
      added_fallback_served: row.added_fallback_served,
      session_kept: sessionKept,
      pinned_kept_failed: pinnedKeptFailed,
      log,
    },
    content: content === null ? null : { request: content[0], response: content[1], truncated: content[2] },
  }
}
