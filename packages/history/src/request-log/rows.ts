/**
 * A request record as a row of `request_log` (migration 0015): the columns the filters read,
 * and in `detail` the rest of the record (entry.ts), written with COPY (writer/copy.ts).
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

/** The columns of `request_log` (migrations 0015, 0020) a row fills, in the order `encodeRow` writes them. */
const COLUMNS = [
  'at', 'id', 'node_id', 'region', 'surface', 'gateway_key', 'requested_provider', 'requested_model', 'session_id',
  'served_provider', 'served_model', 'served_key_id', 'served_key_name', 'key_ids', 'status', 'failure_class',
  'latency_ms', 'total_tokens', 'stream', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served', 'search', 'detail',
] as const

/** JSON.stringify's number: NaN and the infinities are null. */
const jsonNumber = (value: number): string => (Number.isFinite(value) ? String(value) : 'null')
const jsonNumberOrNull = (value: number | null): string => (value === null ? 'null' : jsonNumber(value))

// A record as its row of `request_log` in COPY's text format: the filter columns, flat, and the
// entry array of entry.ts as JSON, written byte by byte into a slab of
// the request log's RowArena (writer/arena.ts). Plain text (printable ASCII but `"` and `\`:
// every id, name and routing sentence the gateway makes) is copied a byte per character; any
// other text goes through the generic escapers (copyText, copyJson, copyArray). So no string
// is built for a row, and nothing of it is left for the GC. rows.test.ts holds the bytes equal
// to the generic escapers and JSON.stringify (of `compactEntry`) for any record.

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

function sinkSearchPart(sink: ByteSink, part: string | null): void {
  if (!part) return
  if (!sink.plain(part, false, true)) sink.utf8(copyText(part.toLowerCase()))
  sink.ascii('\\n')
}

/** Writes the row of `record` into `sink`, as UTF-8, ending in a newline. */
export function encodeRow(sink: ByteSink, record: RequestRecord): void {
  const { requested, served, routing, usage } = record
  // id and at are written as they are (a UUID and an ISO time), unescaped, as the row always had them.
  if (!sink.plain(record.at)) sink.utf8(record.at)
  sink.ascii('\t')
  if (!sink.plain(record.id)) sink.utf8(record.id)
  sink.ascii('\t')
  sinkText(sink, record.node_id)
  sink.ascii('\t')
  sinkText(sink, record.region)
  sink.ascii('\t')
  sinkText(sink, record.surface)
  sink.ascii('\t')
  sinkText(sink, record.gateway_key)
  sink.ascii('\t')
  sinkText(sink, requested.provider)
  sink.ascii('\t')
  sinkText(sink, requested.model)
  sink.ascii('\t')
  sinkText(sink, requested.session_id)
  sink.ascii('\t')
  sinkText(sink, served.provider)
  sink.ascii('\t')
  sinkText(sink, served.model)
  sink.ascii('\t')
  sinkText(sink, served.key_id)
  sink.ascii('\t')
  sinkText(sink, served.key_name)
  sink.ascii('\t')
  // key_ids as a text[] literal: plain ids quoted as they are, else the generic escaper.
  const ids = keyIds(record)
  const mark = sink.position
  sink.ascii('{')
  let plainIds = true
  for (let index = 0; index < ids.length && plainIds; index++) {
    if (index > 0) sink.ascii(',')
    plainIds = sink.plain(ids[index] as string, true)
  }
  if (plainIds) sink.ascii('}')
  else {
    sink.rewind(mark)
    sink.utf8(copyArray(ids))
  }
  sink.ascii('\t')
  sink.ascii(String(record.status))
  sink.ascii('\t')
  sinkText(sink, record.failure_class)
  sink.ascii('\t')
  sink.ascii(String(record.latency_ms))
  sink.ascii('\t')
  sink.ascii(usage === null ? '\\N' : String(usage.total_tokens))
  sink.ascii(record.stream ? '\tt\t' : '\tf\t')
  if (!sink.plain(routing.picked_by)) sink.utf8(routing.picked_by)
  sink.ascii(routing.moved_off !== null ? '\tt' : '\tf')
  sink.ascii(routing.check !== null ? '\tt' : '\tf')
  sink.ascii(routing.added_fallback_served ? '\tt\t' : '\tf\t')
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
  sink.ascii('\t')
  encodeEntry(sink, record)
  sink.ascii('\n')
}

/** The `detail` column: the array of entry.ts (`compactEntry`'s JSON), COPY-escaped. */
function encodeEntry(sink: ByteSink, record: RequestRecord): void {
  const { routing, usage, content } = record
  sink.ascii('[1,')
  sinkJsonStrings(sink, record.requested.fallbacks)
  sink.ascii(',')
  sinkJsonNullable(sink, record.message)
  sink.ascii(',')
  sink.ascii(jsonNumberOrNull(record.ttft_ms))
  if (usage === null) sink.ascii(',null,[')
  else {
    sink.ascii(',[')
    sink.ascii(jsonNumber(usage.prompt_tokens))
    sink.ascii(',')
    sink.ascii(jsonNumber(usage.completion_tokens))
    sink.ascii(',')
    sink.ascii(jsonNumber(usage.total_tokens))
    sink.ascii('],[')
  }
  for (let index = 0; index < record.attempts.length; index++) {
    const attempt = record.attempts[index] as RequestRecord['attempts'][number]
    sink.ascii(index === 0 ? '[' : ',[')
    sinkJson(sink, attempt.provider)
    sink.ascii(',')
    sinkJson(sink, attempt.model)
    sink.ascii(',')
    sinkJson(sink, attempt.key_id)
    sink.ascii(',')
    sinkJson(sink, attempt.key_name)
    sink.ascii(',')
    sink.ascii(jsonNumber(attempt.status))
    sink.ascii(',')
    sinkJsonNullable(sink, attempt.failure_class)
    sink.ascii(',')
    sink.ascii(jsonNumber(attempt.latency_ms))
    sink.ascii(',')
    sink.ascii(jsonNumberOrNull(attempt.wait_hint_ms))
    sink.ascii(']')
  }
  if (routing.moved_off === null) sink.ascii('],null,[')
  else {
    sink.ascii('],[')
    sinkJson(sink, routing.moved_off.provider)
    sink.ascii(',')
    sinkJson(sink, routing.moved_off.reason)
    sink.ascii('],[')
  }
  for (let index = 0; index < routing.skipped_keys.length; index++) {
    const key = routing.skipped_keys[index] as RequestRecord['routing']['skipped_keys'][number]
    sink.ascii(index === 0 ? '[' : ',[')
    sinkJson(sink, key.provider)
    sink.ascii(',')
    sinkJson(sink, key.model)
    sink.ascii(',')
    sinkJson(sink, key.key_id)
    sink.ascii(',')
    sinkJson(sink, key.key_name)
    sink.ascii(',')
    sinkJson(sink, key.reason)
    sink.ascii(']')
  }
  const check = routing.check
  if (check === null) sink.ascii('],null,')
  else {
    sink.ascii('],[')
    sinkJson(sink, check.key_id)
    sink.ascii(',')
    sinkJson(sink, check.key_name)
    sink.ascii(',')
    sinkJson(sink, check.provider)
    sink.ascii(',')
    sinkJson(sink, check.model)
    sink.ascii(',')
    sinkJson(sink, check.outcome)
    sink.ascii('],')
  }
  sink.ascii(routing.session_kept === null ? 'null,' : routing.session_kept ? 'true,' : 'false,')
  sink.ascii(routing.pinned_kept_failed ? 'true,' : 'false,')
  sinkJsonStrings(sink, routing.log)
  if (content === null) sink.ascii(',null]')
  else {
    sink.ascii(',[')
    sinkJsonNullable(sink, content.request)
    sink.ascii(',')
    sinkJsonNullable(sink, content.response)
    sink.ascii(content.truncated ? ',true]]' : ',false]]')
  }
}

/** Writes a batch of rows (`encodeRow`'s bytes one after another, after `COPY_HEADER_BYTES` of room) in one COPY. */
export async function insertRows(pool: pg.Pool, data: Buffer): Promise<void> {
  await copyRows(pool, REQUEST_LOG_TABLE, COLUMNS, data)
}
