/**
 * A request record as a row of `request_log` (migration 0015): the columns the filters read,
 * and the whole entry as the API answers it.
 */
import type pg from 'pg'
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

/** One row of `request_log`: the filter columns, flat, and the whole entry. */
interface Row {
  at: string
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
  key_ids: string[]
  status: number
  failure_class: string | null
  latency_ms: number
  total_tokens: number | null
  stream: boolean
  picked_by: string
  moved_off: boolean
  is_check: boolean
  added_fallback_served: boolean
  search: string
  entry: RequestRecord
}

/** The row of a record. */
export function toRow(record: RequestRecord): Row {
  return {
    at: record.at,
    id: record.id,
    node_id: record.node_id,
    region: record.region,
    surface: record.surface,
    gateway_key: record.gateway_key,
    requested_provider: record.requested.provider,
    requested_model: record.requested.model,
    session_id: record.requested.session_id,
    served_provider: record.served.provider,
    served_model: record.served.model,
    served_key_id: record.served.key_id,
    served_key_name: record.served.key_name,
    key_ids: keyIds(record),
    status: record.status,
    failure_class: record.failure_class,
    latency_ms: record.latency_ms,
    total_tokens: record.usage?.total_tokens ?? null,
    stream: record.stream,
    picked_by: record.routing.picked_by,
    moved_off: record.routing.moved_off !== null,
    is_check: record.routing.check !== null,
    added_fallback_served: record.routing.added_fallback_served,
    search: searchText(record),
    entry: record,
  }
}

/** Every column of `request_log` with its type (migration 0015). */
const COLUMNS: readonly [name: keyof Row, type: string][] = [
  ['at', 'timestamptz'],
  ['id', 'uuid'],
  ['node_id', 'text'],
  ['region', 'text'],
  ['surface', 'text'],
  ['gateway_key', 'text'],
  ['requested_provider', 'text'],
  ['requested_model', 'text'],
  ['session_id', 'text'],
  ['served_provider', 'text'],
  ['served_model', 'text'],
  ['served_key_id', 'text'],
  ['served_key_name', 'text'],
  ['key_ids', 'text[]'],
  ['status', 'integer'],
  ['failure_class', 'text'],
  ['latency_ms', 'double precision'],
  ['total_tokens', 'integer'],
  ['stream', 'boolean'],
  ['picked_by', 'text'],
  ['moved_off', 'boolean'],
  ['is_check', 'boolean'],
  ['added_fallback_served', 'boolean'],
  ['search', 'text'],
  ['entry', 'json'],
]

/**
 * The whole batch goes as ONE json parameter that `json_to_recordset` turns into rows: one
 * JSON.stringify in the gateway (a few us per row), one parse in Postgres. Column arrays
 * (`unnest`) measured ~10x the gateway's CPU per row here: pg escapes every element of every
 * array parameter in JavaScript.
 */
const INSERT_SQL = (() => {
  const names = COLUMNS.map(([name]) => `"${name}"`).join(', ')
  const types = COLUMNS.map(([name, type]) => `"${name}" ${type}`).join(', ')
  return `INSERT INTO ${REQUEST_LOG_TABLE} (${names}) SELECT ${names} FROM json_to_recordset($1::json) AS row (${types})`
})()

/** A record as the JSON text of its row: what the writer buffers (one flat string per request, cheap to keep for the GC). */
export function rowText(record: RequestRecord): string {
  return JSON.stringify(toRow(record))
}

/** Writes a batch of rows (`rowText`) in one statement. */
export async function insertRows(pool: pg.Pool, rows: readonly string[]): Promise<void> {
  if (rows.length === 0) return
  await pool.query(INSERT_SQL, [`[${rows.join(',')}]`])
}
