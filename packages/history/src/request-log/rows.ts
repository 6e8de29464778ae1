/**
 * A request record as a row of `request_log` (migration 0015): the columns the filters read,
 * and the whole entry as the API answers it, written with COPY (writer/copy.ts).
 */
import type pg from 'pg'
import type { RequestRecord } from './record.ts'
import type { ByteSink } from '../writer/arena.ts'
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

// The row again, written byte by byte into the arena's slab (writer/arena.ts): the same bytes
// as `rowLine` gives as UTF-8 (rows.test.ts holds them equal), with no string built for a row
// whose text is plain, so nothing of it is left for the GC.

/** A COPY text field: `\N` for null, a plain string as it is, else escaped. */
function sinkText(sink: ByteSink, value: string | null): void {
  if (value === null) sink.ascii('\\N')
  else if (!sink.plain(value)) sink.utf8(copyText(value))
}

/** A JSON string, COPY-escaped. */
function sinkJson(sink: ByteSink, value: string): void {
  if (!sink.plain(value, true)) sink.utf8(copyJson(JSON.stringify(value)))
}

function sinkJsonNullable(sink: ByteSink, value: string | null): void {
  if (value === null) sink.ascii('null')
  else sinkJson(sink, value)
}

function sinkJsonStrings(sink: ByteSink, values: readonly string[]): void {
  sink.ascii('[')
  for (let index = 0; index < values.length; index++) {
    if (index > 0) sink.ascii(',')
    sinkJson(sink, values[index] as string)
  }
  sink.ascii(']')
}

const sinkBool = (sink: ByteSink, value: boolean) => sink.ascii(value ? 'true' : 'false')

function sinkSearchPart(sink: ByteSink, part: string | null): void {
  if (!part) return
  if (!sink.plain(part, false, true)) sink.utf8(copyText(part.toLowerCase()))
  sink.ascii('\\n')
}

/** Writes `rowLine(record)` into `sink`, as UTF-8. */
export function encodeRow(record: RequestRecord, sink: ByteSink): void {
  const { requested, served, routing, usage, content } = record
  const ascii = (text: string) => sink.ascii(text)
  // id and at are written as they are, as rowLine does; they are a UUID and an ISO time.
  if (!sink.plain(record.at)) sink.utf8(record.at)
  ascii('\t')
  if (!sink.plain(record.id)) sink.utf8(record.id)
  ascii('\t')
  sinkText(sink, record.node_id)
  ascii('\t')
  sinkText(sink, record.region)
  ascii('\t')
  sinkText(sink, record.surface)
  ascii('\t')
  sinkText(sink, record.gateway_key)
  ascii('\t')
  sinkText(sink, requested.provider)
  ascii('\t')
  sinkText(sink, requested.model)
  ascii('\t')
  sinkText(sink, requested.session_id)
  ascii('\t')
  sinkText(sink, served.provider)
  ascii('\t')
  sinkText(sink, served.model)
  ascii('\t')
  sinkText(sink, served.key_id)
  ascii('\t')
  sinkText(sink, served.key_name)
  ascii('\t')
  // key_ids as a text[] literal: plain ids quoted as they are, else the generic escaper.
  const ids = keyIds(record)
  const mark = sink.position
  ascii('{')
  let plainIds = true
  for (let index = 0; index < ids.length && plainIds; index++) {
    if (index > 0) ascii(',')
    plainIds = sink.plain(ids[index] as string, true)
  }
  if (plainIds) ascii('}')
  else {
    sink.rewind(mark)
    sink.utf8(copyArray(ids))
  }
  ascii('\t')
  ascii(String(record.status))
  ascii('\t')
  sinkText(sink, record.failure_class)
  ascii('\t')
  ascii(String(record.latency_ms))
  ascii('\t')
  ascii(usage === null ? '\\N' : String(usage.total_tokens))
  ascii(record.stream ? '\tt\t' : '\tf\t')
  if (!sink.plain(routing.picked_by)) sink.utf8(routing.picked_by)
  ascii(routing.moved_off !== null ? '\tt' : '\tf')
  ascii(routing.check !== null ? '\tt' : '\tf')
  ascii(routing.added_fallback_served ? '\tt\t' : '\tf\t')
  sinkSearchPart(sink, record.id)
  sinkSearchPart(sink, requested.session_id)
  sinkSearchPart(sink, requested.provider)
  sinkSearchPart(sink, requested.model)
  sinkSearchPart(sink, served.provider)
  sinkSearchPart(sink, served.model)
  sinkSearchPart(sink, record.gateway_key)
  sinkSearchPart(sink, record.message)
  for (const attempt of record.attempts) {
    sinkSearchPart(sink, attempt.key_id)
    sinkSearchPart(sink, attempt.key_name)
  }
  ascii('\t{"id":')
  sinkJson(sink, record.id)
  ascii(',"at":')
  sinkJson(sink, record.at)
  ascii(',"node_id":')
  sinkJson(sink, record.node_id)
  ascii(',"region":')
  sinkJson(sink, record.region)
  ascii(',"surface":')
  sinkJson(sink, record.surface)
  ascii(',"gateway_key":')
  sinkJsonNullable(sink, record.gateway_key)
  ascii(',"requested":{"provider":')
  sinkJsonNullable(sink, requested.provider)
  ascii(',"model":')
  sinkJson(sink, requested.model)
  ascii(',"fallbacks":')
  sinkJsonStrings(sink, requested.fallbacks)
  ascii(',"session_id":')
  sinkJsonNullable(sink, requested.session_id)
  ascii('},"served":{"provider":')
  sinkJsonNullable(sink, served.provider)
  ascii(',"model":')
  sinkJsonNullable(sink, served.model)
  ascii(',"key_id":')
  sinkJsonNullable(sink, served.key_id)
  ascii(',"key_name":')
  sinkJsonNullable(sink, served.key_name)
  ascii('},"status":')
  ascii(jsonNumber(record.status))
  ascii(',"failure_class":')
  sinkJsonNullable(sink, record.failure_class)
  ascii(',"message":')
  sinkJsonNullable(sink, record.message)
  ascii(',"latency_ms":')
  ascii(jsonNumber(record.latency_ms))
  ascii(',"ttft_ms":')
  ascii(jsonNumberOrNull(record.ttft_ms))
  ascii(',"usage":')
  if (usage === null) ascii('null')
  else {
    ascii('{"prompt_tokens":')
    ascii(jsonNumber(usage.prompt_tokens))
    ascii(',"completion_tokens":')
    ascii(jsonNumber(usage.completion_tokens))
    ascii(',"total_tokens":')
    ascii(jsonNumber(usage.total_tokens))
    ascii('}')
  }
  ascii(record.stream ? ',"stream":true,"attempts":[' : ',"stream":false,"attempts":[')
  for (let index = 0; index < record.attempts.length; index++) {
    const attempt = record.attempts[index] as RequestRecord['attempts'][number]
    ascii(index === 0 ? '{"provider":' : ',{"provider":')
    sinkJson(sink, attempt.provider)
    ascii(',"model":')
    sinkJson(sink, attempt.model)
    ascii(',"key_id":')
    sinkJson(sink, attempt.key_id)
    ascii(',"key_name":')
    sinkJson(sink, attempt.key_name)
    ascii(',"status":')
    ascii(jsonNumber(attempt.status))
    ascii(',"failure_class":')
    sinkJsonNullable(sink, attempt.failure_class)
    ascii(',"latency_ms":')
    ascii(jsonNumber(attempt.latency_ms))
    ascii(',"wait_hint_ms":')
    ascii(jsonNumberOrNull(attempt.wait_hint_ms))
    ascii('}')
  }
  ascii('],"routing":{"picked_by":')
  sinkJson(sink, routing.picked_by)
  ascii(',"moved_off":')
  if (routing.moved_off === null) ascii('null')
  else {
    ascii('{"provider":')
    sinkJson(sink, routing.moved_off.provider)
    ascii(',"reason":')
    sinkJson(sink, routing.moved_off.reason)
    ascii('}')
  }
  ascii(',"skipped_keys":[')
  for (let index = 0; index < routing.skipped_keys.length; index++) {
    const key = routing.skipped_keys[index] as RequestRecord['routing']['skipped_keys'][number]
    ascii(index === 0 ? '{"provider":' : ',{"provider":')
    sinkJson(sink, key.provider)
    ascii(',"model":')
    sinkJson(sink, key.model)
    ascii(',"key_id":')
    sinkJson(sink, key.key_id)
    ascii(',"key_name":')
    sinkJson(sink, key.key_name)
    ascii(',"reason":')
    sinkJson(sink, key.reason)
    ascii('}')
  }
  ascii('],"check":')
  const check = routing.check
  if (check === null) ascii('null')
  else {
    ascii('{"key_id":')
    sinkJson(sink, check.key_id)
    ascii(',"key_name":')
    sinkJson(sink, check.key_name)
    ascii(',"provider":')
    sinkJson(sink, check.provider)
    ascii(',"model":')
    sinkJson(sink, check.model)
    ascii(',"outcome":')
    sinkJson(sink, check.outcome)
    ascii('}')
  }
  ascii(',"added_fallback_served":')
  sinkBool(sink, routing.added_fallback_served)
  ascii(',"session_kept":')
  ascii(routing.session_kept === null ? 'null' : routing.session_kept ? 'true' : 'false')
  ascii(',"pinned_kept_failed":')
  sinkBool(sink, routing.pinned_kept_failed)
  ascii(',"log":')
  sinkJsonStrings(sink, routing.log)
  ascii('},"content":')
  if (content === null) ascii('null')
  else {
    ascii('{"request":')
    sinkJsonNullable(sink, content.request)
    ascii(',"response":')
    sinkJsonNullable(sink, content.response)
    ascii(',"truncated":')
    sinkBool(sink, content.truncated)
    ascii('}')
  }
  ascii('}\n')
}

/** Writes a batch of rows (`rowLine`, as UTF-8 bytes one after another after `COPY_HEADER_BYTES` of room) in one COPY. */
export async function insertRows(pool: pg.Pool, data: Buffer): Promise<void> {
  await copyRows(pool, REQUEST_LOG_TABLE, COLUMNS, data)
}
