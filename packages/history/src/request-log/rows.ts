/**
 * A request record as a row of `request_log` (migration 0015): the columns the filters read,
 * and the whole entry as the API answers it, written with COPY (writer/copy.ts).
 */
import type pg from 'pg'
import type { RequestRecord } from './record.ts'
import { copyArray, copyJson, copyRows, copyText } from '../writer/copy.ts'
export { COPY_HEADER_BYTES } from '../writer/copy.ts'

export const REQUEST_LOG_TABLE = 'request_log'

/**
 * Printable ASCII but the quote and the backslash: such a string is the same in JSON (inside
 * quotes) and in COPY's text format, so it is copied as it is. Every id, name and routing
 * sentence the gateway makes is one; anything else goes through the generic escapers.
 */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** Every key the request was served by or tried, for the `key_ids` filter. */
function keyIds(record: RequestRecord): string[] {
  const ids: string[] = []
  if (record.served.key_id !== null) ids.push(record.served.key_id)
  for (const attempt of record.attempts) if (!ids.includes(attempt.key_id)) ids.push(attempt.key_id)
  return ids
}

/** One part of the `search` column: lowercased, as COPY text, with its (escaped) newline. */
function searchPart(part: string | null): string {
  if (!part) return ''
  return PLAIN.test(part) ? `${part.toLowerCase()}\\n` : `${copyText(part.toLowerCase())}\\n`
}

/**
 * The `search` column as a COPY field: id, session, providers, models, gateway key, message,
 * and the key ids and names of every attempt, lowercased, one a line (what `search` matches).
 */
function searchField(record: RequestRecord): string {
  const { requested, served } = record
  let text =
    searchPart(record.id) + searchPart(requested.session_id) + searchPart(requested.provider) + searchPart(requested.model) +
    searchPart(served.provider) + searchPart(served.model) + searchPart(record.gateway_key) + searchPart(record.message)
  for (const attempt of record.attempts) text += searchPart(attempt.key_id) + searchPart(attempt.key_name)
  return text
}

/** Every column of `request_log` (migration 0015), in the order `rowLine` writes them. */
const COLUMNS = [
  'at', 'id', 'node_id', 'region', 'surface', 'gateway_key', 'requested_provider', 'requested_model', 'session_id',
  'served_provider', 'served_model', 'served_key_id', 'served_key_name', 'key_ids', 'status', 'failure_class',
  'latency_ms', 'total_tokens', 'stream', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served', 'search', 'entry',
] as const

const bool = (value: boolean) => (value ? 't' : 'f')

/** A COPY text field: a plain string as it is, else escaped. */
const text = (value: string | null): string => (value !== null && PLAIN.test(value) ? value : copyText(value))

/** A JSON string, escaped for a COPY text field (JSON's backslashes doubled). */
function jsonString(value: string): string {
  if (PLAIN.test(value)) return `"${value}"`
  return copyJson(JSON.stringify(value))
}

const jsonNullable = (value: string | null): string => (value === null ? 'null' : jsonString(value))
/** JSON.stringify's number: NaN and the infinities are null. */
const jsonNumber = (value: number): string => (Number.isFinite(value) ? String(value) : 'null')
const jsonNumberOrNull = (value: number | null): string => (value === null ? 'null' : jsonNumber(value))
const jsonBool = (value: boolean): string => (value ? 'true' : 'false')

function jsonStrings(values: readonly string[]): string {
  let json = '['
  for (let index = 0; index < values.length; index++) json += `${index === 0 ? '' : ','}${jsonString(values[index] as string)}`
  return `${json}]`
}

/**
 * The record as JSON (the `entry` column), already escaped for COPY: what
 * `copyJson(JSON.stringify(record))` gives, key for key, built straight from the record's known
 * shape instead of walking the object (rows.test.ts holds the two equal for any record).
 */
export function entryJson(record: RequestRecord): string {
  const { requested, served, usage, routing, content } = record
  let attempts = ''
  for (let index = 0; index < record.attempts.length; index++) {
    const attempt = record.attempts[index] as RequestRecord['attempts'][number]
    attempts +=
      `${index === 0 ? '' : ','}{"provider":${jsonString(attempt.provider)},"model":${jsonString(attempt.model)},"key_id":${jsonString(attempt.key_id)},` +
      `"key_name":${jsonString(attempt.key_name)},"status":${jsonNumber(attempt.status)},"failure_class":${jsonNullable(attempt.failure_class)},` +
      `"latency_ms":${jsonNumber(attempt.latency_ms)},"wait_hint_ms":${jsonNumberOrNull(attempt.wait_hint_ms)}}`
  }
  let skipped = ''
  for (let index = 0; index < routing.skipped_keys.length; index++) {
    const key = routing.skipped_keys[index] as RequestRecord['routing']['skipped_keys'][number]
    skipped +=
      `${index === 0 ? '' : ','}{"provider":${jsonString(key.provider)},"model":${jsonString(key.model)},"key_id":${jsonString(key.key_id)},` +
      `"key_name":${jsonString(key.key_name)},"reason":${jsonString(key.reason)}}`
  }
  const { check, moved_off: movedOff } = routing
  return (
    `{"id":${jsonString(record.id)},"at":${jsonString(record.at)},"node_id":${jsonString(record.node_id)},"region":${jsonString(record.region)},` +
    `"surface":${jsonString(record.surface)},"gateway_key":${jsonNullable(record.gateway_key)},` +
    `"requested":{"provider":${jsonNullable(requested.provider)},"model":${jsonString(requested.model)},"fallbacks":${jsonStrings(requested.fallbacks)},"session_id":${jsonNullable(requested.session_id)}},` +
    `"served":{"provider":${jsonNullable(served.provider)},"model":${jsonNullable(served.model)},"key_id":${jsonNullable(served.key_id)},"key_name":${jsonNullable(served.key_name)}},` +
    `"status":${jsonNumber(record.status)},"failure_class":${jsonNullable(record.failure_class)},"message":${jsonNullable(record.message)},` +
    `"latency_ms":${jsonNumber(record.latency_ms)},"ttft_ms":${jsonNumberOrNull(record.ttft_ms)},` +
    `"usage":${usage === null ? 'null' : `{"prompt_tokens":${jsonNumber(usage.prompt_tokens)},"completion_tokens":${jsonNumber(usage.completion_tokens)},"total_tokens":${jsonNumber(usage.total_tokens)}}`},` +
    `"stream":${jsonBool(record.stream)},"attempts":[${attempts}],` +
    `"routing":{"picked_by":${jsonString(routing.picked_by)},"moved_off":${movedOff === null ? 'null' : `{"provider":${jsonString(movedOff.provider)},"reason":${jsonString(movedOff.reason)}}`},` +
    `"skipped_keys":[${skipped}],` +
    `"check":${check === null ? 'null' : `{"key_id":${jsonString(check.key_id)},"key_name":${jsonString(check.key_name)},"provider":${jsonString(check.provider)},"model":${jsonString(check.model)},"outcome":${jsonString(check.outcome)}}`},` +
    `"added_fallback_served":${jsonBool(routing.added_fallback_served)},"session_kept":${routing.session_kept === null ? 'null' : jsonBool(routing.session_kept)},` +
    `"pinned_kept_failed":${jsonBool(routing.pinned_kept_failed)},"log":${jsonStrings(routing.log)}},` +
    `"content":${content === null ? 'null' : `{"request":${jsonNullable(content.request)},"response":${jsonNullable(content.response)},"truncated":${jsonBool(content.truncated)}}`}}`
  )
}

/**
 * A record as its row of `request_log` in COPY's text format: the filter columns, flat, and
 * the whole entry as JSON. The request log encodes it at once into its `RowArena`, so the
 * string, like the record's many small objects, dies young.
 */
export function rowLine(record: RequestRecord): string {
  const { requested, served, routing } = record
  return (
    `${record.at}\t${record.id}\t${text(record.node_id)}\t${text(record.region)}\t${text(record.surface)}\t${text(record.gateway_key)}\t` +
    `${text(requested.provider)}\t${text(requested.model)}\t${text(requested.session_id)}\t` +
    `${text(served.provider)}\t${text(served.model)}\t${text(served.key_id)}\t${text(served.key_name)}\t` +
    `${copyArray(keyIds(record))}\t${String(record.status)}\t${text(record.failure_class)}\t${String(record.latency_ms)}\t` +
    `${record.usage === null ? '\\N' : String(record.usage.total_tokens)}\t${bool(record.stream)}\t${routing.picked_by}\t` +
    `${bool(routing.moved_off !== null)}\t${bool(routing.check !== null)}\t${bool(routing.added_fallback_served)}\t` +
    `${searchField(record)}\t${entryJson(record)}\n`
  )
}

/** Writes a batch of rows (`rowLine`, as UTF-8 bytes one after another after `COPY_HEADER_BYTES` of room) in one COPY. */
export async function insertRows(pool: pg.Pool, data: Buffer): Promise<void> {
  await copyRows(pool, REQUEST_LOG_TABLE, COLUMNS, data)
}
