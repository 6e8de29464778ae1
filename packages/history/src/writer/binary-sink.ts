/**
 * Rows in COPY's binary format, written in place into a slab as ByteSink writes text (writer/arena.ts).
 * Postgres then parses no text: about a sixth of its CPU per request-log row (bench/LOG.md, "Stop 15").
 *
 * Layout (PostgreSQL docs, "COPY", "Binary Format"): the stream starts with an 11-byte signature,
 * an int32 of flags and an int32 header-extension length (`BINARY_COPY_HEADER`); each tuple is an
 * int16 field count, then per field an int32 length (-1 for NULL) and the bytes of its type's
 * send function; the stream ends in an int16 -1 (`BINARY_COPY_TRAILER`). All integers are
 * big-endian.
 */
import { ByteSink, FULL } from './arena.ts'

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
export const storable = (value: string): string => (value.includes('\0') ? value.replace(NUL, '\uFFFD') : value)

/** ByteSink's bytes and the binary fields around them. Every write throws FULL when the slab has no room. */
export class BinarySink extends ByteSink {
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
