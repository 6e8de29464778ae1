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

/** Every key the request was served by or tried, for the `key_ids` filter. */
function keyIds(record: RequestRecord): string[] {
  const ids: string[] = []
  if (record.served.key_id !== null) ids.push(record.served.key_id)
  for (const attempt of record.attempts) if (!ids.includes(attempt.key_id)) ids.push(attempt.key_id)
  return ids
}

/** Every column of `request_log` (migration 0015), in the order `rowLine` writes them. */
const COLUMNS = [
  'at', 'id', 'node_id', 'region', 'surface', 'gateway_key', 'requested_provider', 'requested_model', 'session_id',
  'served_provider', 'served_model', 'served_key_id', 'served_key_name', 'key_ids', 'status', 'failure_class',
  'latency_ms', 'total_tokens', 'stream', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served', 'search', 'entry',
] as const

/** JSON.stringify's number: NaN and the infinities are null. */
const jsonNumber = (value: number): string => (Number.isFinite(value) ? String(value) : 'null')
const jsonNumberOrNull = (value: number | null): string => (value === null ? 'null' : jsonNumber(value))

// A record as its row of `request_log` in COPY's text format: the filter columns, flat, and the
// whole entry as JSON (the record as the API answers it), written byte by byte into a slab of
// the request log's RowArena (writer/arena.ts). Plain text (printable ASCII but `"` and `\`:
// every id, name and routing sentence the gateway makes) is copied a byte per character; any
// other text goes through the generic escapers (copyText, copyJson, copyArray). So no string
// is built for a row, and nothing of it is left for the GC. rows.test.ts holds the bytes equal
// to the generic escapers and JSON.stringify for any record.

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

/** Writes the row of `record` into `sink`, as UTF-8, ending in a newline. */
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

/** Writes a batch of rows (`encodeRow`'s bytes one after another, after `COPY_HEADER_BYTES` of room) in one COPY. */
export async function insertRows(pool: pg.Pool, data: Buffer): Promise<void> {
  await copyRows(pool, REQUEST_LOG_TABLE, COLUMNS, data)
}
