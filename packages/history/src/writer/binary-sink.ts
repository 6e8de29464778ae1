/**
 * Rows in COPY's binary format, written in place into a buffer, with no string built per row.
 * Postgres then parses no text: about a sixth of its CPU per request-log row (bench/LOG.md, "Stop 15").
 *
 * Layout (PostgreSQL docs, "COPY", "Binary Format"): the stream starts with an 11-byte signature,
 * an int32 of flags and an int32 header-extension length (`BINARY_COPY_HEADER`); each tuple is an
 * int16 field count, then per field an int32 length (-1 for NULL) and the bytes of its type's
 * send function; the stream ends in an int16 -1 (`BINARY_COPY_TRAILER`). All integers are
 * big-endian.
 */

/** `PGCOPY\n\377\r\n\0`, flags 0, no header extension. */
export const BINARY_COPY_HEADER = Buffer.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0])
/** The int16 -1 that ends the stream. */
export const BINARY_COPY_TRAILER = Buffer.from([0xff, 0xff])

/** Milliseconds from the Unix epoch to Postgres's (2000-01-01T00:00:00Z). */
const POSTGRES_EPOCH_MS = 946_684_800_000
const TEXT_OID = 25
const TWO_32 = 4_294_967_296
/** Postgres text cannot hold NUL: one is written as U+FFFD, as the text format's writer does (copy.ts). */
const NUL = /\0/g

/** What a text value becomes in Postgres: NUL replaced. */
const storable = (value: string): string => (value.includes('\0') ? value.replace(NUL, '\uFFFD') : value)

/** Thrown by a `BinarySink` that has no room left: the caller retries in a larger buffer. */
export const FULL = new Error('byte sink: buffer full')

/**
 * Writes a row straight into a buffer, so it is encoded without a string of its own: text
 * (`ascii`/`plain` copy a byte per character what they can and return false, writing nothing,
 * for text that needs escaping; `utf8` writes any string as it is) and the binary fields around
 * it. Every write throws FULL when the buffer has no room.
 */
export class BinarySink {
  private buffer: Buffer = Buffer.alloc(0)
  private at = 0

  reset(buffer: Buffer, at: number): void {
    this.buffer = buffer
    this.at = at
  }

  get position(): number {
    return this.at
  }

  /** Text known to be ASCII (constants, numbers, ISO times). */
  ascii(text: string): void {
    const length = text.length
    let at = this.at
    if (at + length > this.buffer.length) throw FULL
    const buffer = this.buffer
    for (let index = 0; index < length; index++) buffer[at++] = text.charCodeAt(index)
    this.at = at
  }

  /**
   * Copies `text` if every character is printable ASCII other than `"` and `\\` (the same in
   * JSON, COPY text and as a quoted array or JSON element), in double quotes when `quote`,
   * lowercased when `lower`; else writes nothing and returns false.
   */
  plain(text: string, quote = false, lower = false): boolean {
    const length = text.length
    const start = this.at
    if (start + length + 2 > this.buffer.length) throw FULL
    const buffer = this.buffer
    let at = start
    if (quote) buffer[at++] = 0x22
    for (let index = 0; index < length; index++) {
      let code = text.charCodeAt(index)
      if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return false
      if (lower && code >= 0x41 && code <= 0x5a) code += 0x20
      buffer[at++] = code
    }
    if (quote) buffer[at++] = 0x22
    this.at = at
    return true
  }

  /** Goes back to `position` (a `position` read before), forgetting what was written since (bench/lib/request-log-text.ts). */
  rewind(position: number): void {
    this.at = position
  }

  /** Any text, as UTF-8. */
  utf8(text: string): void {
    const buffer = this.buffer
    if (this.at + text.length * 3 > buffer.length && this.at + Buffer.byteLength(text, 'utf8') > buffer.length) throw FULL
    this.at += buffer.write(text, this.at, 'utf8')
  }

  private room(bytes: number): void {
    if (this.at + bytes > this.buffer.length) throw FULL
  }

  int16(value: number): void {
    this.room(2)
    this.at = this.buffer.writeInt16BE(value, this.at)
  }

  int32(value: number): void {
    this.room(4)
    this.at = this.buffer.writeInt32BE(value, this.at)
  }

  /** Starts a field whose length is written by `close`: returns where the length goes. */
  open(): number {
    this.room(4)
    const mark = this.at
    this.at += 4
    return mark
  }

  /** Writes the length of the field `open` started at `mark`: every byte since. */
  close(mark: number): void {
    this.buffer.writeInt32BE(this.at - mark - 4, mark)
  }

  null(): void {
    this.int32(-1)
  }

  /** A text field (UTF-8, NUL as U+FFFD), or NULL. */
  text(value: string | null): void {
    if (value === null) return this.null()
    const mark = this.open()
    if (!this.plain(value)) this.utf8(storable(value))
    this.close(mark)
  }

  /** Text fields, one after another. */
  texts(...values: (string | null)[]): void {
    for (const value of values) this.text(value)
  }

  /** Raw UTF-8 inside an open field (NUL as U+FFFD), lowercased when `lower`. */
  part(value: string, lower = false): void {
    if (!this.plain(value, false, lower)) this.utf8(storable(lower ? value.toLowerCase() : value))
  }

  /** One byte inside an open field. */
  byte(value: number): void {
    this.room(1)
    this.buffer[this.at++] = value
  }

  /** An integer column: a value that is no int32 (a fraction, past 2^31) is NULL rather than a refused batch. */
  int4(value: number | null): void {
    if (value === null || !Number.isInteger(value) || value > 0x7fffffff || value < -0x80000000) return this.null()
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
    this.byte(value ? 1 : 0)
  }

  /** timestamptz: int64 microseconds since 2000-01-01 UTC, from Unix milliseconds. */
  timestamptz(ms: number): void {
    if (!Number.isFinite(ms)) throw new Error(`not a time: ${ms}`)
    const micros = (ms - POSTGRES_EPOCH_MS) * 1000
    const high = Math.floor(micros / TWO_32)
    this.int32(8)
    this.int32(high | 0)
    this.room(4)
    this.at = this.buffer.writeUInt32BE((micros - high * TWO_32) >>> 0, this.at)
  }

  /** uuid: its 16 bytes, from the 36-character form. */
  uuid(text: string): void {
    if (text.length !== 36) throw new Error(`not a uuid: ${text}`)
    this.int32(16)
    this.room(16)
    const buffer = this.buffer
    let at = this.at
    for (let index = 0; index < 36; ) {
      if (index === 8 || index === 13 || index === 18 || index === 23) {
        if (text.charCodeAt(index) !== 0x2d) throw new Error(`not a uuid: ${text}`)
        index++
        continue
      }
      buffer[at++] = (hexValue(text.charCodeAt(index)) << 4) | hexValue(text.charCodeAt(index + 1))
      index += 2
    }
    this.at = at
  }

  /** text[] of one dimension: ndim, has-null flag, element type, length and lower bound, then the elements. */
  textArray(values: readonly string[]): void {
    const mark = this.open()
    this.int32(values.length === 0 ? 0 : 1)
    this.int32(0)
    this.int32(TEXT_OID)
    if (values.length > 0) {
      this.int32(values.length)
      this.int32(1)
      for (const value of values) this.text(value)
    }
    this.close(mark)
  }
}

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30
  if (code >= 0x61 && code <= 0x66) return code - 0x57
  if (code >= 0x41 && code <= 0x46) return code - 0x37
  throw new Error(`not a hex digit: ${String.fromCharCode(code)}`)
}

/** Bytes per chunk rows are encoded into: about a hundred request log rows. */
const CHUNK_BYTES = 1 << 16
/** The largest row `rowEncoder` takes (a request log row with content on is well under 1 MB). */
const MAX_ROW_BYTES = 64 << 20

/**
 * Encodes each row with `encode` through `sink` straight into a shared chunk and returns its
 * bytes there (a view: no copy, no string): a row waits for its batch as one Buffer, not as the
 * objects it was made from. A row that does not fit goes to a fresh chunk, doubled while the row
 * outgrows it; a chunk is freed by the GC once no row in it is held.
 */
export function rowEncoder<Value>(sink: BinarySink, encode: (sink: BinarySink, value: Value) => void): (value: Value) => Buffer {
  let chunk = Buffer.allocUnsafe(CHUNK_BYTES)
  let offset = 0
  return (value) => {
    for (;;) {
      sink.reset(chunk, offset)
      try {
        encode(sink, value)
        const row = chunk.subarray(offset, sink.position)
        offset = sink.position
        return row
      } catch (error) {
        if (error !== FULL) throw error
        const size = offset === 0 ? chunk.length * 2 : CHUNK_BYTES
        if (size > MAX_ROW_BYTES) throw new Error(`a row larger than ${MAX_ROW_BYTES} bytes`)
        chunk = Buffer.allocUnsafe(size)
        offset = 0
      }
    }
  }
}
