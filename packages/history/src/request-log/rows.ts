/**
 * A request record as a row of `request_log` (the baseline migration): the columns the filters read,
 * and in `detail` the rest of the record (entry.ts), written with COPY in its binary format
 * (writer/copy.ts, writer/binary-sink.ts).
 */
import type pg from 'pg'
import type { RequestRecord } from './record.ts'
import { BINARY_COPY_HEADER, BINARY_COPY_TRAILER, BinarySink, rowEncoder } from '../writer/binary-sink.ts'
import { COPY_HEADER_BYTES, copyRows } from '../writer/copy.ts'

export const REQUEST_LOG_TABLE = 'request_log'

/** Every key the request was served by or tried, for the `key_ids` filter. */
export function keyIds(record: RequestRecord): string[] {
  const ids: string[] = []
  if (record.served.key_id !== null) ids.push(record.served.key_id)
  for (const attempt of record.attempts) if (!ids.includes(attempt.key_id)) ids.push(attempt.key_id)
  return ids
}

/** True when the request tried no key but the one that served it (or no key at all). */
function onlyServedKey(record: RequestRecord): boolean {
  const served = record.served.key_id
  for (const attempt of record.attempts) if (attempt.key_id !== served) return false
  return true
}

/** The columns of `request_log` a row fills, in the order `encodeRow` writes them. */
const COLUMNS = [
  'at', 'id', 'node_id', 'region', 'surface', 'gateway_key', 'requested_provider', 'requested_model', 'session_id',
  'served_provider', 'served_model', 'served_key_id', 'served_key_name', 'key_ids', 'status', 'failure_class',
  'latency_ms', 'total_tokens', 'stream', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served', 'search', 'detail',
] as const

/** JSON.stringify's number: null, NaN and the infinities are null. */
const jsonNumber = (value: number | null): string => (value !== null && Number.isFinite(value) ? String(value) : 'null')

// A record is written byte by byte into a buffer, with no string built for the row:
// plain text (printable ASCII but `"` and `\`: every id, name and routing sentence the gateway
// makes) a byte per character, any other text as UTF-8. rows.test.ts reads the tuples back field
// by field against the record, and request-log.test.ts through Postgres.

/** Writes one JSON string (quotes included) into a sink. */
type JsonStringWriter = (sink: BinarySink, value: string) => void

/** A JSON string as UTF-8: plain text copied a byte per character, anything else through JSON.stringify. */
const sinkJson: JsonStringWriter = (sink, value) => {
  if (!sink.plain(value, true)) sink.utf8(JSON.stringify(value))
}

function sinkJsonNullable(sink: BinarySink, value: string | null, json: JsonStringWriter): void {
  if (value === null) sink.ascii('null')
  else json(sink, value)
}

function sinkJsonStrings(sink: BinarySink, values: readonly string[], json: JsonStringWriter): void {
  sink.ascii('[')
  for (let index = 0; index < values.length; index++) {
    if (index > 0) sink.ascii(',')
    json(sink, values[index] as string)
  }
  sink.ascii(']')
}

/** True when lowercasing cannot change `text`: no ASCII capital and nothing past ASCII. */
function lowercase(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if ((code >= 0x41 && code <= 0x5a) || code > 0x7f) return false
  }
  return true
}

/** One line of the `search` column: lowercased, then a newline; nothing for an empty part. */
function sinkSearchPart(sink: BinarySink, part: string | null): void {
  if (!part) return
  sink.part(part, true)
  sink.byte(0x0a)
}

/** A part a column holds as it is: in `search` only when lowercasing would change it (query.ts matches the column itself otherwise). */
function sinkColumnPart(sink: BinarySink, part: string | null): void {
  if (part && !lowercase(part)) sinkSearchPart(sink, part)
}

/** Writes the tuple of `record` into `sink` (COPY's binary format, its fields in the order of COLUMNS). */
export function encodeRow(sink: BinarySink, record: RequestRecord): void {
  const { requested, served, routing, usage } = record
  sink.int16(COLUMNS.length)
  sink.timestamptz(Date.parse(record.at))
  sink.uuid(record.id)
  sink.texts(record.node_id, record.region, record.surface, record.gateway_key, requested.provider, requested.model, requested.session_id, served.provider, served.model, served.key_id, served.key_name)
  // NULL for a request that used no key but the one that served it (the store's keysOf)
  if (onlyServedKey(record)) sink.null()
  else sink.textArray(keyIds(record))
  sink.int4(record.status)
  sink.text(record.failure_class)
  sink.float8(record.latency_ms)
  sink.int4(usage === null ? null : usage.total_tokens)
  sink.bool(record.stream)
  sink.text(routing.picked_by)
  sink.bool(routing.moved_off !== null)
  sink.bool(routing.check !== null)
  sink.bool(routing.added_fallback_served)
  // `search` holds, lowercased, what `search` must match and no column holds as it is: the
  // message, key names of attempts, and any column part lowercasing would change. So a row of
  // lowercase ids and names (most of them) carries an empty one (query.ts, SEARCHED).
  const search = sink.open()
  for (const part of [requested.session_id, requested.provider, requested.model, served.provider, served.model, record.gateway_key]) sinkColumnPart(sink, part)
  sinkSearchPart(sink, record.message)
  for (const attempt of record.attempts) {
    sinkColumnPart(sink, attempt.key_id)
    if (attempt.key_name === served.key_name) sinkColumnPart(sink, attempt.key_name)
    else sinkSearchPart(sink, attempt.key_name)
  }
  sink.close(search)
  const detail = sink.open()
  encodeEntry(sink, record)
  sink.close(detail)
}

/** A comma, then `value` as JSON (null when null). */
function nextJson(sink: BinarySink, value: string | null, json: JsonStringWriter): void {
  sink.ascii(',')
  sinkJsonNullable(sink, value, json)
}

/** A comma, then `value` as JSON.stringify writes a number (null when null). */
function nextNumber(sink: BinarySink, value: number | null): void {
  sink.ascii(',')
  sink.ascii(jsonNumber(value))
}

/** Five JSON strings, comma-separated: a skipped key's fields, or a check's. */
function fiveStrings(sink: BinarySink, json: JsonStringWriter, first: string, second: string, third: string, fourth: string, fifth: string): void {
  json(sink, first)
  nextJson(sink, second, json)
  nextJson(sink, third, json)
  nextJson(sink, fourth, json)
  nextJson(sink, fifth, json)
}

/**
 * The `detail` column: the array of entry.ts, as `JSON.stringify(compactEntry(record))` writes it
 * (rows.test.ts builds that array as plain values).
 * `json` writes each string: the bench's text-format rows (bench/lib/request-log-text.ts) pass
 * one that also doubles backslashes for COPY's text format.
 */
export function encodeEntry(sink: BinarySink, record: RequestRecord, json: JsonStringWriter = sinkJson): void {
  const { routing, usage, content } = record
  sink.ascii('[1,')
  sinkJsonStrings(sink, record.requested.fallbacks, json)
  nextJson(sink, record.message, json)
  nextNumber(sink, record.ttft_ms)
  if (usage === null) sink.ascii(',null,[')
  else {
    sink.ascii(',[')
    sink.ascii(jsonNumber(usage.prompt_tokens))
    nextNumber(sink, usage.completion_tokens)
    nextNumber(sink, usage.total_tokens)
    sink.ascii('],[')
  }
  for (let index = 0; index < record.attempts.length; index++) {
    const attempt = record.attempts[index] as RequestRecord['attempts'][number]
    sink.ascii(index === 0 ? '[' : ',[')
    json(sink, attempt.provider)
    nextJson(sink, attempt.model, json)
    nextJson(sink, attempt.key_id, json)
    nextJson(sink, attempt.key_name, json)
    nextNumber(sink, attempt.status)
    nextJson(sink, attempt.failure_class, json)
    nextNumber(sink, attempt.latency_ms)
    nextNumber(sink, attempt.wait_hint_ms)
    sink.ascii(']')
  }
  if (routing.moved_off === null) sink.ascii('],null,[')
  else {
    sink.ascii('],[')
    json(sink, routing.moved_off.provider)
    nextJson(sink, routing.moved_off.reason, json)
    sink.ascii('],[')
  }
  for (let index = 0; index < routing.skipped_keys.length; index++) {
    const key = routing.skipped_keys[index] as RequestRecord['routing']['skipped_keys'][number]
    sink.ascii(index === 0 ? '[' : ',[')
    fiveStrings(sink, json, key.provider, key.model, key.key_id, key.key_name, key.reason)
    sink.ascii(']')
  }
  const check = routing.check
  if (check === null) sink.ascii('],null,')
  else {
    sink.ascii('],[')
    fiveStrings(sink, json, check.key_id, check.key_name, check.provider, check.model, check.outcome)
    sink.ascii('],')
  }
  sink.ascii(routing.session_kept === null ? 'null,' : routing.session_kept ? 'true,' : 'false,')
  sink.ascii(routing.pinned_kept_failed ? 'true,' : 'false,')
  sinkJsonStrings(sink, routing.log, json)
  if (content === null) sink.ascii(',null]')
  else {
    sink.ascii(',[')
    sinkJsonNullable(sink, content.request, json)
    nextJson(sink, content.response, json)
    sink.ascii(content.truncated ? ',true]]' : ',false]]')
  }
}

/** One record's tuple (`encodeRow`) as a Buffer of its own. */
export const rowBytes = rowEncoder(new BinarySink(), encodeRow)

/** What a batch starts with: room for CopyData's header, then the binary stream's header. */
const BATCH_HEAD = Buffer.concat([Buffer.alloc(COPY_HEADER_BYTES), BINARY_COPY_HEADER])

/** Tuples (`rowBytes`) as one binary COPY stream: room for CopyData's header, the stream's header, the tuples, its trailer. */
export function batchOf(rows: readonly Buffer[]): Buffer {
  return Buffer.concat([BATCH_HEAD, ...rows, BINARY_COPY_TRAILER])
}

/** Writes a batch (`batchOf`'s bytes) in one COPY; the log's trigger counts its rows in the same statement (counts.ts). */
export async function insertRows(pool: pg.Pool, data: Buffer): Promise<void> {
  await copyRows(pool, REQUEST_LOG_TABLE, COLUMNS, data, { binary: true })
}
