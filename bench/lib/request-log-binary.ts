/**
 * A scratch encoder of request-log rows in COPY's *binary* format, for bench/request-log-pg.ts
 * (issue 15): how much of Postgres's CPU per row the text format's line/field scanning,
 * de-escaping and input functions cost, against the recv functions binary uses instead. Not
 * product code: it writes the 25 columns of migration 0015 (`entry` last, holding entry.ts's
 * array as JSON text, `JSON.stringify(compactEntry(record))`, what rows.ts writes into
 * `detail`) with the same values `encodeRow` gives them, byte by byte into a Buffer as
 * ByteSink does, each field's int32 length patched in after its bytes. Layout (PostgreSQL docs, "COPY", "Binary Format"): an 11-byte signature,
 * int32 flags, int32 header-extension length; per tuple an int16 field count, then per field
 * an int32 length (-1 for NULL) and the bytes of its type's send function; an int16 -1 trailer.
 */
import type { RequestRecord } from '../../packages/history/src/request-log/record.ts'
import { compactEntry } from '../../packages/history/src/request-log/entry.ts'
import { ByteSink, FULL } from '../../packages/history/src/writer/arena.ts'

/** `PGCOPY\n\377\r\n\0`, flags 0, no header extension. */
export const BINARY_HEADER = Buffer.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0])
/** The int16 -1 that ends the data. */
export const BINARY_TRAILER = Buffer.from([0xff, 0xff])

/** Milliseconds from the Unix epoch to Postgres's (2000-01-01T00:00:00Z). */
const POSTGRES_EPOCH_MS = 946_684_800_000
const TEXT_OID = 25
const TWO_32 = 4_294_967_296

/** Bytes of a binary COPY stream, written in place into a Buffer: ByteSink's text bytes, and the binary fields around them. */
export class BinarySink extends ByteSink {
  room(bytes: number): void {
    if (this.at + bytes > this.buffer.length) throw FULL
  }

  int16(value: number): void {
    this.room(2)
    const buffer = this.buffer
    buffer[this.at++] = (value >>> 8) & 0xff
    buffer[this.at++] = value & 0xff
  }

  int32(value: number): void {
    this.room(4)
    const buffer = this.buffer
    let at = this.at
    buffer[at++] = (value >>> 24) & 0xff
    buffer[at++] = (value >>> 16) & 0xff
    buffer[at++] = (value >>> 8) & 0xff
    buffer[at++] = value & 0xff
    this.at = at
  }

  /** A field's length written later: returns where it goes. */
  open(): number {
    this.room(4)
    const mark = this.at
    this.at += 4
    return mark
  }

  /** Writes the length of the field opened at `mark` (everything since). */
  close(mark: number): void {
    const length = this.at - mark - 4
    const buffer = this.buffer
    buffer[mark] = (length >>> 24) & 0xff
    buffer[mark + 1] = (length >>> 16) & 0xff
    buffer[mark + 2] = (length >>> 8) & 0xff
    buffer[mark + 3] = length & 0xff
  }

  null(): void {
    this.int32(-1)
  }

  /** A text field (its length and UTF-8), or NULL. */
  text(value: string | null): void {
    if (value === null) return this.null()
    const mark = this.open()
    if (!this.plain(value)) this.utf8(value)
    this.close(mark)
  }

  int4(value: number | null): void {
    if (value === null) return this.null()
    this.int32(4)
    this.int32(value)
  }

  float8(value: number): void {
    this.int32(8)
    this.room(8)
    this.at = this.buffer.writeDoubleBE(value, this.at)
  }

  bool(value: boolean): void {
    this.int32(1)
    this.room(1)
    this.buffer[this.at++] = value ? 1 : 0
  }

  /** timestamptz: int64 microseconds since 2000-01-01 UTC, from an ISO time (ms precision). */
  timestamptz(iso: string): void {
    const micros = (Date.parse(iso) - POSTGRES_EPOCH_MS) * 1000
    const high = Math.floor(micros / TWO_32)
    this.int32(8)
    this.int32(high | 0)
    this.int32((micros - high * TWO_32) >>> 0)
  }

  /** uuid: its 16 bytes, from the 36-character form. */
  uuid(text: string): void {
    this.int32(16)
    this.room(16)
    const buffer = this.buffer
    let at = this.at
    for (let index = 0; index < text.length; ) {
      const code = text.charCodeAt(index)
      if (code === 0x2d) {
        index++
        continue
      }
      buffer[at++] = (hexValue(code) << 4) | hexValue(text.charCodeAt(index + 1))
      index += 2
    }
    if (at !== this.at + 16) throw new Error(`not a uuid: ${text}`)
    this.at = at
  }

  /** text[]: ndim, has-null flag, element OID, then per dimension its length and lower bound, then the elements. */
  textArray(values: readonly string[]): void {
    const mark = this.open()
    if (values.length === 0) {
      this.int32(0)
      this.int32(0)
      this.int32(TEXT_OID)
    } else {
      this.int32(1)
      this.int32(0)
      this.int32(TEXT_OID)
      this.int32(values.length)
      this.int32(1)
      for (const value of values) this.text(value)
    }
    this.close(mark)
  }

  /** One part of the `search` column: lowercased, then a newline. */
  searchPart(part: string | null): void {
    if (!part) return
    if (!this.plain(part, false, true)) this.utf8(part.toLowerCase())
    this.room(1)
    this.buffer[this.at++] = 0x0a
  }
}

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30
  if (code >= 0x61 && code <= 0x66) return code - 0x57
  if (code >= 0x41 && code <= 0x46) return code - 0x37
  throw new Error(`not a hex digit: ${String.fromCharCode(code)}`)
}

/** Every key the request was served by or tried (as rows.ts). */
function keyIds(record: RequestRecord): string[] {
  const ids: string[] = []
  if (record.served.key_id !== null) ids.push(record.served.key_id)
  for (const attempt of record.attempts) if (!ids.includes(attempt.key_id)) ids.push(attempt.key_id)
  return ids
}

/** One tuple of the 25 columns of migration 0015, in the order of rows.ts's COLUMNS. */
export function encodeBinaryRow(sink: BinarySink, record: RequestRecord): void {
  const { requested, served, routing, usage } = record
  sink.int16(25)
  sink.timestamptz(record.at)
  sink.uuid(record.id)
  sink.text(record.node_id)
  sink.text(record.region)
  sink.text(record.surface)
  sink.text(record.gateway_key)
  sink.text(requested.provider)
  sink.text(requested.model)
  sink.text(requested.session_id)
  sink.text(served.provider)
  sink.text(served.model)
  sink.text(served.key_id)
  sink.text(served.key_name)
  sink.textArray(keyIds(record))
  sink.int4(record.status)
  sink.text(record.failure_class)
  sink.float8(record.latency_ms)
  sink.int4(usage === null ? null : usage.total_tokens)
  sink.bool(record.stream)
  sink.text(routing.picked_by)
  sink.bool(routing.moved_off !== null)
  sink.bool(routing.check !== null)
  sink.bool(routing.added_fallback_served)
  const search = sink.open()
  sink.searchPart(record.id)
  sink.searchPart(requested.session_id)
  sink.searchPart(requested.provider)
  sink.searchPart(requested.model)
  sink.searchPart(served.provider)
  sink.searchPart(served.model)
  sink.searchPart(record.gateway_key)
  sink.searchPart(record.message)
  for (const attempt of record.attempts) {
    sink.searchPart(attempt.key_id)
    sink.searchPart(attempt.key_name)
  }
  sink.close(search)
  // entry.ts's array as JSON (the bytes rows.ts writes into `detail`, less COPY's escaping).
  sink.text(JSON.stringify(compactEntry(record)))
}

/** `records` as one binary COPY stream (header, tuples, trailer), after `room` bytes left for the caller. */
export function binaryBatch(records: readonly RequestRecord[], room: number): Buffer {
  const sink = new BinarySink()
  for (let size = 1 << 20; ; size *= 2) {
    const buffer = Buffer.allocUnsafe(size)
    sink.reset(buffer, room)
    try {
      sink.room(BINARY_HEADER.length)
      buffer.set(BINARY_HEADER, room)
      sink.reset(buffer, room + BINARY_HEADER.length)
      for (const record of records) encodeBinaryRow(sink, record)
      sink.int16(-1)
      return buffer.subarray(0, sink.position)
    } catch (error) {
      if (error !== FULL || size > 1 << 28) throw error
    }
  }
}
