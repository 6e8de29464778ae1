/**
 * A protobuf writer for the OTLP encoder (otlp-proto.ts): one growing buffer, each
 * length-delimited message's length patched in place when it ends, ASCII copied by hand. The
 * attributes a node's spans repeat are encoded once (spans.ts SharedAttributes); each name's
 * encoding as a key is kept.
 */
import type { Attributes, AttributeValue, HrTime } from '@opentelemetry/api'

/** Wire types. */
export const VARINT = 0
export const FIXED64 = 1
export const LENGTH = 2
export const FIXED32 = 5
const keys = new Map<string, Uint8Array>()
const scratch = new Float64Array(1)
const scratchBytes = new Uint8Array(scratch.buffer)

export class Writer {
  private buffer: Buffer
  private pos = 0
  /** The buffer's length, kept in a field: cheaper to read than a typed array's length, on every write. */
  private limit: number

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size)
    this.limit = size
  }

  /** Writes from the start again, in the same buffer. */
  reset(): void {
    this.pos = 0
  }

  /** What was written so far: a view of the buffer (copy it to keep it past the next write). */
  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.pos)
  }

  tag(field: number, wire: number): this {
    return this.varint((field << 3) | wire)
  }

  /** A non-negative integer below 2^53 (lengths, counts, enums, int64 attribute values that are not negative). */
  varint(value: number): this {
    this.room(10)
    const buffer = this.buffer
    let pos = this.pos
    while (value > 0x7f) {
      buffer[pos++] = (value % 0x80) | 0x80
      value = Math.floor(value / 0x80)
    }
    buffer[pos++] = value
    this.pos = pos
    return this
  }

  fixed32(value: number): this {
    this.room(4)
    this.pos = this.buffer.writeUInt32LE(value >>> 0, this.pos)
    return this
  }

  /** An HrTime as fixed64 nanoseconds since the epoch. */
  time(time: HrTime): this {
    return this.nanos(Math.trunc(time[0]), Math.trunc(time[1]))
  }

  /** Wall-clock milliseconds as fixed64 nanoseconds since the epoch, split as spans.ts `hrTime` splits them. */
  millis(millis: number): this {
    const seconds = Math.floor(millis / 1000)
    const nanos = Math.round((millis - seconds * 1000) * 1e6)
    return nanos >= 1e9 ? this.nanos(seconds + 1, nanos - 1e9) : this.nanos(seconds, nanos)
  }

  /** Seconds times 1e9 plus nanoseconds, exactly, without BigInt: in two halves below 2^53. */
  private nanos(seconds: number, nanos: number): this {
    const low16 = (seconds % 0x10000) * 1e9 + nanos
    const high = Math.floor(seconds / 0x10000) * 1e9
    const lowWord = (high % 0x10000) * 0x10000 + (low16 % 0x100000000)
    this.fixed32(lowWord >>> 0)
    return this.fixed32((Math.floor(high / 0x10000) + Math.floor(low16 / 0x100000000) + Math.floor(lowWord / 0x100000000)) >>> 0)
  }

  /** `length` bytes of `source` from `at`, length-prefixed (ids as bytes). */
  copy(source: Uint8Array, at: number, length: number): this {
    this.varint(length).room(length)
    const buffer = this.buffer
    let pos = this.pos
    for (let index = at; index < at + length; index++) buffer[pos++] = source[index]!
    this.pos = pos
    return this
  }

  /** A length-prefixed UTF-8 string: a short ASCII one copied by hand (cheaper than a call into Buffer.write at this size). */
  string(text: string): this {
    const length = text.length
    if (length < 0x80) {
      this.room(length + 1)
      const buffer = this.buffer
      const start = this.pos
      let code = 0
      for (let index = 0; index < length; index++) code |= buffer[start + 1 + index] = text.charCodeAt(index)
      if (code < 0x80) {
        buffer[start] = length
        this.pos = start + 1 + length
        return this
      }
    }
    this.varint(Buffer.byteLength(text)).room(3 * length)
    this.pos += this.buffer.write(text, this.pos)
    return this
  }

  raw(bytes: Uint8Array): this {
    this.room(bytes.length)
    this.buffer.set(bytes, this.pos)
    this.pos += bytes.length
    return this
  }

  /** Starts a length-delimited message as field `field`: `reserved` bytes kept for its length (two for one that is mostly 128 bytes to 16 KiB long). */
  begin(field: number, reserved = 1): number {
    this.tag(field, LENGTH).room(reserved)
    const at = this.pos
    this.pos += reserved
    return at
  }

  /** Ends the message `begin` started: its length in place, the body moved if the length takes other than the bytes kept. */
  end(at: number, reserved = 1): void {
    const length = this.pos - at - reserved
    const size = length < 0x80 ? 1 : varintSize(length)
    if (size !== reserved) {
      this.room(size - reserved)
      this.buffer.copyWithin(at + size, at + reserved, this.pos)
      this.pos += size - reserved
    }
    if (size === 1) {
      this.buffer[at] = length
      return
    }
    const end = this.pos
    this.pos = at
    this.varint(length)
    this.pos = end
  }

  /** Each attribute as a KeyValue in field `field`. */
  attributes(field: number, attributes: Attributes): void {
    const parts: unknown[] = []
    for (const name in attributes) parts.push(name, attributes[name])
    this.list(field, parts)
  }

  /**
   * Attributes as names and values side by side, each a KeyValue in field `field`; between them,
   * KeyValues already encoded for that field (a span's shared sets: an object with their `bytes`).
   */
  list(field: number, parts: readonly unknown[]): void {
    for (let index = 0; index < parts.length; index++) {
      const name = parts[index]
      if (typeof name !== 'string') {
        this.raw((name as { bytes: Uint8Array }).bytes)
        continue
      }
      const value = parts[++index] as AttributeValue | undefined
      const key = keyOf(name)
      this.tag(field, LENGTH)
      if (typeof value === 'number' && value >= 0 && Number.isSafeInteger(value)) {
        // A count (tokens, a status): the KeyValue's length known up front, nothing to patch.
        const size = varintSize(value)
        this.varint(key.length + 3 + size).raw(key).tag(2, LENGTH).varint(size + 1).tag(3, VARINT).varint(value)
        continue
      }
      const start = this.room(1).pos++
      this.keyValue(key, value)
      this.end(start)
    }
  }

  /** A KeyValue: the key (field 1) as `encodedKey` has it, the value (field 2). */
  keyValue(encodedKey: Uint8Array, value: AttributeValue | undefined): void {
    this.raw(encodedKey)
    const start = this.begin(2)
    this.anyValue(value)
    this.end(start)
  }

  private anyValue(value: AttributeValue | null | undefined): void {
    switch (typeof value) {
      case 'string':
        this.tag(1, LENGTH).string(value)
        return
      case 'boolean':
        this.tag(2, VARINT).varint(value ? 1 : 0)
        return
      case 'number':
        if (Number.isInteger(value) && value >= 0 && value <= Number.MAX_SAFE_INTEGER) this.tag(3, VARINT).varint(value)
        else if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) this.tag(3, VARINT).raw(int64(value))
        else {
          scratch[0] = value
          this.tag(4, FIXED64).raw(scratchBytes)
        }
        return
    }
    if (Array.isArray(value)) {
      const start = this.begin(5)
      for (const item of value) {
        const itemStart = this.begin(1)
        this.anyValue(item)
        this.end(itemStart)
      }
      this.end(start)
    }
  }

  private room(bytes: number): this {
    if (this.pos + bytes <= this.limit) return this
    this.limit = Math.max(this.limit * 2, this.pos + bytes)
    const grown = Buffer.allocUnsafe(this.limit)
    grown.set(this.buffer.subarray(0, this.pos))
    this.buffer = grown
    return this
  }
}

/** A name's encoding as a KeyValue's key (field 1), kept for the first 512 names. */
function keyOf(name: string): Uint8Array {
  let key = keys.get(name)
  if (key === undefined) {
    key = new Uint8Array(new Writer(name.length * 3 + 8).tag(1, LENGTH).string(name).bytes())
    if (keys.size < 512) keys.set(name, key)
  }
  return key
}

/** A negative (or unsafe) int64 as its ten-byte two's-complement varint. */
function int64(value: number): Uint8Array {
  let bits = BigInt.asUintN(64, BigInt(value))
  const bytes: number[] = []
  while (bits > 0x7fn) {
    bytes.push(Number(bits & 0x7fn) | 0x80)
    bits >>= 7n
  }
  bytes.push(Number(bits))
  return Uint8Array.from(bytes)
}

function varintSize(value: number): number {
  let size = 1
  while (value > 0x7f) {
    value = Math.floor(value / 0x80)
    size++
  }
  return size
}
