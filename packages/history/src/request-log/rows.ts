/**
 * A request record as a row of `request_log` (migration 0015): the columns the filters read,
 * and the whole entry as the API answers it.
 */
import type pg from 'pg'
import type { Column } from '../writer/insert.ts'
import type { RequestRecord } from './record.ts'

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

/** The columns of `request_log`, in the order `insertRows` writes them. */
export const REQUEST_LOG_COLUMNS: readonly Column<RequestRecord>[] = [
  { name: 'at', type: 'timestamptz', value: (record) => record.at },
  { name: 'id', type: 'uuid', value: (record) => record.id },
  { name: 'node_id', type: 'text', value: (record) => record.node_id },
  { name: 'region', type: 'text', value: (record) => record.region },
  { name: 'surface', type: 'text', value: (record) => record.surface },
  { name: 'gateway_key', type: 'text', value: (record) => record.gateway_key },
  { name: 'requested_provider', type: 'text', value: (record) => record.requested.provider },
  { name: 'requested_model', type: 'text', value: (record) => record.requested.model },
  { name: 'session_id', type: 'text', value: (record) => record.requested.session_id },
  { name: 'served_provider', type: 'text', value: (record) => record.served.provider },
  { name: 'served_model', type: 'text', value: (record) => record.served.model },
  { name: 'served_key_id', type: 'text', value: (record) => record.served.key_id },
  { name: 'served_key_name', type: 'text', value: (record) => record.served.key_name },
  // Sent as an array literal in a text[] parameter and cast back per row (see insertRecords).
  { name: 'key_ids', type: 'text', value: (record) => arrayLiteral(keyIds(record)) },
  { name: 'status', type: 'integer', value: (record) => record.status },
  { name: 'failure_class', type: 'text', value: (record) => record.failure_class },
  { name: 'latency_ms', type: 'double precision', value: (record) => record.latency_ms },
  { name: 'total_tokens', type: 'integer', value: (record) => record.usage?.total_tokens ?? null },
  { name: 'stream', type: 'boolean', value: (record) => record.stream },
  { name: 'picked_by', type: 'text', value: (record) => record.routing.picked_by },
  { name: 'moved_off', type: 'boolean', value: (record) => record.routing.moved_off !== null },
  { name: 'is_check', type: 'boolean', value: (record) => record.routing.check !== null },
  { name: 'added_fallback_served', type: 'boolean', value: (record) => record.routing.added_fallback_served },
  { name: 'search', type: 'text', value: searchText },
  // json (not jsonb): stored as sent, read back whole; no per-row binary conversion on insert.
  { name: 'entry', type: 'text', value: (record) => JSON.stringify(record) },
]

/** Columns sent as text and cast to their own type per row (no assignment cast from text exists). */
const CASTS: Record<string, string> = { key_ids: 'text[]', entry: 'json' }

const INSERT_SQL = (() => {
  const names = REQUEST_LOG_COLUMNS.map((column) => `"${column.name}"`).join(', ')
  const selected = REQUEST_LOG_COLUMNS.map((column) => (CASTS[column.name] ? `"${column.name}"::${CASTS[column.name]}` : `"${column.name}"`)).join(', ')
  const unnest = REQUEST_LOG_COLUMNS.map((column, index) => `$${index + 1}::${column.type}[]`).join(', ')
  return `INSERT INTO ${REQUEST_LOG_TABLE} (${names}) SELECT ${selected} FROM unnest(${unnest}) AS row (${names})`
})()

/** Writes a batch of records in one statement (one array parameter per column). */
export async function insertRecords(pool: pg.Pool, records: readonly RequestRecord[]): Promise<void> {
  if (records.length === 0) return
  const values = REQUEST_LOG_COLUMNS.map((column) => {
    const array: unknown[] = new Array(records.length)
    for (let index = 0; index < records.length; index++) array[index] = column.value(records[index]!) ?? null
    return array
  })
  await pool.query(INSERT_SQL, values)
}

/** A Postgres array literal of text values (`{"a","b"}`), quoting every element. */
export function arrayLiteral(values: readonly string[]): string {
  return `{${values.map((value) => `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`
}
