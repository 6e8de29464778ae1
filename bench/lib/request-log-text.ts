/**
 * The request log's rows in COPY's *text* format, as the product wrote them before it moved to
 * the binary format (packages/history/src/request-log/rows.ts): kept for bench/recording/request-log-pg.ts,
 * whose variants compare what Postgres pays per row for each format and schema. Not product code.
 * The 25 columns of migrations 0015/0020 (`detail` last: entry.ts's array as JSON), written byte
 * by byte into a BinarySink; text fields through COPY's escapes.
 */
import type { RequestRecord } from '../../packages/history/src/request-log/record.ts'
import type { BinarySink } from '../../packages/history/src/writer/binary-sink.ts'
import { encodeEntry, keyIds } from '../../packages/history/src/request-log/rows.ts'

const NEEDS_ESCAPE = /[\\\n\r\t\0]/
const ESCAPES = /[\\\n\r\t\0]/g
// Postgres text cannot hold NUL at all: one in a field (a caller's model name, say) would make the
// server refuse the whole batch, every other row with it. It is written as U+FFFD instead.
const ESCAPED: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\0': '\uFFFD' }

/** A text field of COPY's text format: backslash, newline, CR and tab escaped, NUL as U+FFFD; null is `\N`. */
export function copyText(value: string | null): string {
  if (value === null) return '\\N'
  return NEEDS_ESCAPE.test(value) ? value.replace(ESCAPES, (char) => ESCAPED[char] as string) : value
}

/** A JSON text as a COPY field: JSON.stringify leaves no raw newline or tab, only backslashes to double. */
export function copyJson(json: string): string {
  return json.includes('\\') ? json.replaceAll('\\', '\\\\') : json
}

/** A `text[]` field: every element double-quoted (quotes and backslashes escaped), then escaped for COPY. */
export function copyArray(values: readonly string[]): string {
  let literal = '{'
  for (let index = 0; index < values.length; index++) {
    const value = values[index] as string
    literal += `${index === 0 ? '' : ','}"${/["\\]/.test(value) ? value.replace(/["\\]/g, (char) => `\\${char}`) : value}"`
  }
  return copyText(`${literal}}`)
}

// A record as its row of `request_log` in COPY's text format: the filter columns, flat, and the
// entry array of entry.ts as JSON, written byte by byte into a BinarySink's
// buffer (writer/binary-sink.ts). Plain text (printable ASCII but `"` and `\`:
// every id, name and routing sentence the gateway makes) is copied a byte per character; any
// other text goes through the generic escapers (copyText, copyJson, copyArray). So no string
// is built for a row, and nothing of it is left for the GC. rows.test.ts holds the bytes equal
// to the generic escapers and JSON.stringify (of the entry array, rows.test.ts) for any record.

/** A COPY text field: `\N` for null, a plain string as it is, else escaped. */
function sinkText(sink: BinarySink, value: string | null): void {
  if (value === null) sink.ascii('\\N')
  else if (!sink.plain(value)) sink.utf8(copyText(value))
}

/** A JSON string, COPY-escaped (what rows.ts's `encodeEntry` writes each string with here). */
function sinkJson(sink: BinarySink, value: string): void {
  if (!sink.plain(value, true)) sink.utf8(copyJson(JSON.stringify(value)))
}

function sinkSearchPart(sink: BinarySink, part: string | null): void {
  if (!part) return
  if (!sink.plain(part, false, true)) sink.utf8(copyText(part.toLowerCase()))
  sink.ascii('\\n')
}

/** Writes the row of `record` into `sink`, as UTF-8, ending in a newline. */
export function encodeTextRow(sink: BinarySink, record: RequestRecord): void {
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
  encodeEntry(sink, record, sinkJson)
  sink.ascii('\n')
}
