/**
 * A request record as a row of `request_log` (migration 0015): the columns the filters read,
 * and the whole entry as the API answers it, written with COPY (writer/copy.ts).
 */
import type pg from 'pg'
import type { RequestRecord } from './record.ts'
import { copyArray, copyJson, copyRows, copyText } from '../writer/copy.ts'

export const REQUEST_LOG_TABLE = 'request_log'

/** Every key the request was served by or tried, for the `key_ids` filter. */
function keyIds(record: RequestRecord): string[] {
  const ids: string[] = []
  if (record.served.key_id !== null) ids.push(record.served.key_id)
  for (const attempt of record.attempts) if (!ids.includes(attempt.key_id)) ids.push(attempt.key_id)
  return ids
}

/** What `search` matches: id, session, providers, models, key ids and names, gateway key, message. */
function searchText(record: RequestRecord): string {
  const parts = [record.id, record.requested.session_id, record.requested.provider, record.requested.model, record.served.provider, record.served.model, record.gateway_key, record.message]
  for (const attempt of record.attempts) parts.push(attempt.key_id, attempt.key_name)
  let text = ''
  for (const part of parts) if (part) text += `${part}\n`
  return text.toLowerCase()
}

/** Every column of `request_log` (migration 0015), in the order `rowLine` writes them. */
const COLUMNS = [
  'at', 'id', 'node_id', 'region', 'surface', 'gateway_key', 'requested_provider', 'requested_model', 'session_id',
  'served_provider', 'served_model', 'served_key_id', 'served_key_name', 'key_ids', 'status', 'failure_class',
  'latency_ms', 'total_tokens', 'stream', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served', 'search', 'entry',
] as const

const bool = (value: boolean) => (value ? 't' : 'f')

/**
 * A record as its row of `request_log` in COPY's text format: the filter columns, flat, and
 * the whole entry as JSON. What the writer buffers: one flat string per request, cheap to
 * keep for the GC, and the record's many small objects die young.
 */
export function rowLine(record: RequestRecord): string {
  const { requested, served, routing } = record
  const fields = [
    record.at,
    record.id,
    copyText(record.node_id),
    copyText(record.region),
    copyText(record.surface),
    copyText(record.gateway_key),
    copyText(requested.provider),
    copyText(requested.model),
    copyText(requested.session_id),
    copyText(served.provider),
    copyText(served.model),
    copyText(served.key_id),
    copyText(served.key_name),
    copyArray(keyIds(record)),
    String(record.status),
    copyText(record.failure_class),
    String(record.latency_ms),
    String(record.usage?.total_tokens ?? '\\N'),
    bool(record.stream),
    routing.picked_by,
    bool(routing.moved_off !== null),
    bool(routing.check !== null),
    bool(routing.added_fallback_served),
    copyText(searchText(record)),
    copyJson(JSON.stringify(record)),
  ]
  return `${fields.join('\t')}\n`
}

/** Writes a batch of rows (`rowLine`) in one COPY. */
export async function insertRows(pool: pg.Pool, rows: readonly string[]): Promise<void> {
  await copyRows(pool, REQUEST_LOG_TABLE, COLUMNS, rows)
}
