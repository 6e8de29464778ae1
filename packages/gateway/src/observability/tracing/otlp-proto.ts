/**
 * Finished spans as an OTLP/HTTP protobuf body (ExportTraceServiceRequest), for the official
 * OTLP exporter's transport: the bytes the official serializer writes, field for field, in about
 * a sixth of its CPU (bench/README.md, "Tracing"). What makes the difference: a node's attributes
 * repeat (method, route, provider, model, key name, status), so each attribute's encoded KeyValue
 * is kept and copied; and one growing buffer, lengths patched in place.
 *
 * The wire format: https://protobuf.dev/programming-guides/encoding/ ; the messages:
 * opentelemetry-proto's trace/v1/trace.proto and common/v1/common.proto (field numbers below).
 */
import type { Attributes, AttributeValue, HrTime, Link, SpanContext } from '@opentelemetry/api'
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base'

/** Wire types. */
const VARINT = 0
const FIXED64 = 1
const LENGTH = 2
const FIXED32 = 5
/** OTLP span flags: the W3C flags, and that the parent's remoteness is known (and whether it is remote). */
const HAS_IS_REMOTE = 0x100
const IS_REMOTE = 0x200
/** Distinct values one attribute name may have in the cache; a name that has more (a request id) is not cached. */
const VALUES_PER_NAME = 64
const NAMES = 512

/** The request body: spans grouped by resource, then by instrumentation scope, in the order they came. */
export function exportRequest(spans: readonly ReadableSpan[]): Uint8Array {
  const byResource = new Map<Resource, Map<Scope, ReadableSpan[]>>()
  for (const span of spans) {
    let scopes = byResource.get(span.resource)
    if (scopes === undefined) byResource.set(span.resource, (scopes = new Map()))
    const list = scopes.get(span.instrumentationScope)
    if (list === undefined) scopes.set(span.instrumentationScope, [span])
    else list.push(span)
  }
  const out = new Writer(spans.length * 600 + 1024)
  for (const [resource, scopes] of byResource) {
    const resourceSpans = openResource(out, resource)
    for (const [scope, list] of scopes) {
      const scopeSpans = openScope(out, scope)
      for (const span of list) writeSpan(out, span)
      close(out, scope.schemaUrl, scopeSpans)
    }
    close(out, resource.schemaUrl, resourceSpans)
  }
  return out.bytes()
}

/**
 * Spans encoded as they end, for one request body: a node's spans share one resource and one
 * scope, so each is written once, when it ends, and only bytes wait for the export (no span
 * objects kept alive between a request and its batch's export).
 */
export class SpanBatch {
  private body = new Writer(64 * 1024)
  /** Spans written since the last take. */
  count = 0

  constructor(readonly resource: Resource, readonly scope: Scope) {}

  add(span: ReadableSpan): void {
    writeSpan(this.body, span)
    this.count++
  }

  /** The ExportTraceServiceRequest of the spans added so far; the batch starts over. */
  take(): Uint8Array {
    const spans = this.body.bytes()
    const out = new Writer(spans.length + 1024)
    const resourceSpans = openResource(out, this.resource)
    const scopeSpans = openScope(out, this.scope)
    out.raw(spans)
    close(out, this.scope.schemaUrl, scopeSpans)
    close(out, this.resource.schemaUrl, resourceSpans)
    this.body = new Writer(Math.max(64 * 1024, spans.length))
    this.count = 0
    return out.bytes()
  }
}

type Resource = ReadableSpan['resource']
type Scope = ReadableSpan['instrumentationScope']

/** ResourceSpans (field 1 of the request): its resource (attributes 1, dropped count 2); spans follow. */
function openResource(out: Writer, resource: Resource): number {
  const start = out.begin(1)
  const head = out.begin(1)
  out.attributes(1, resource.attributes)
  out.tag(2, VARINT).varint(0)
  out.end(head)
  return start
}

/** ScopeSpans (field 2 of ResourceSpans): its scope (name 1, version 2); spans follow as field 2. */
function openScope(out: Writer, scope: Scope): number {
  const start = out.begin(2)
  const head = out.begin(1)
  out.tag(1, LENGTH).string(scope.name)
  if (scope.version) out.tag(2, LENGTH).string(scope.version)
  out.end(head)
  return start
}

/** Ends a ResourceSpans or a ScopeSpans: both have their schema URL as field 3. */
function close(out: Writer, schemaUrl: string | undefined, start: number): void {
  if (schemaUrl) out.tag(3, LENGTH).string(schemaUrl)
  out.end(start)
}

function writeSpan(out: Writer, span: ReadableSpan): void {
  const start = out.begin(2)
  const context = span.spanContext()
  const parent = span.parentSpanContext
  out.ids(context)
  const state = context.traceState?.serialize()
  if (state) out.tag(3, LENGTH).string(state)
  if (parent?.spanId) out.tag(4, LENGTH).hex(parent.spanId)
  out.tag(5, LENGTH).string(span.name)
  const kind = span.kind + 1
  if (kind !== 0) out.tag(6, VARINT).varint(kind)
  out.tag(7, FIXED64).time(span.startTime)
  out.tag(8, FIXED64).time(span.endTime)
  out.attributes(9, span.attributes)
  out.tag(10, VARINT).varint(span.droppedAttributesCount)
  for (const event of span.events) writeEvent(out, event)
  out.tag(12, VARINT).varint(span.droppedEventsCount)
  for (const link of span.links) writeLink(out, link)
  out.tag(14, VARINT).varint(span.droppedLinksCount)
  const status = out.begin(15)
  if (span.status.message) out.tag(2, LENGTH).string(span.status.message)
  out.tag(3, VARINT).varint(span.status.code)
  out.end(status)
  out.tag(16, FIXED32).fixed32(flags(context.traceFlags, parent?.isRemote))
  out.end(start)
}

function writeEvent(out: Writer, event: TimedEvent): void {
  const start = out.begin(11)
  out.tag(1, FIXED64).time(event.time)
  out.tag(2, LENGTH).string(event.name)
  if (event.attributes) out.attributes(3, event.attributes)
  out.tag(4, VARINT).varint(event.droppedAttributesCount ?? 0)
  out.end(start)
}

function writeLink(out: Writer, link: Link): void {
  const start = out.begin(13)
  const context = link.context
  out.ids(context)
  const state = context.traceState?.serialize()
  if (state) out.tag(3, LENGTH).string(state)
  if (link.attributes) out.attributes(4, link.attributes)
  out.tag(5, VARINT).varint(link.droppedAttributesCount ?? 0)
  out.tag(6, FIXED32).fixed32(flags(context.traceFlags, context.isRemote))
  out.end(start)
}

function flags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | HAS_IS_REMOTE | (isRemote ? IS_REMOTE : 0)
}

/** Encoded KeyValue messages (without their own tag and length) by name, then value. */
const encoded = new Map<string, Map<AttributeValue, Uint8Array> | null>()
const scratch = new Float64Array(1)
const scratchBytes = new Uint8Array(scratch.buffer)

class Writer {
  private buffer: Uint8Array
  private pos = 0

  constructor(size: number) {
    this.buffer = new Uint8Array(size)
  }

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
    const buffer = this.buffer
    const pos = this.pos
    buffer[pos] = value & 0xff
    buffer[pos + 1] = (value >>> 8) & 0xff
    buffer[pos + 2] = (value >>> 16) & 0xff
    buffer[pos + 3] = (value >>> 24) & 0xff
    this.pos = pos + 4
    return this
  }

  /** An HrTime as fixed64 nanoseconds since the epoch, exactly, without BigInt: seconds times 1e9 in two halves below 2^53. */
  time(time: HrTime): this {
    const seconds = Math.trunc(time[0])
    const low16 = (seconds % 0x10000) * 1e9 + Math.trunc(time[1])
    const high = Math.floor(seconds / 0x10000) * 1e9
    const lowWord = (high % 0x10000) * 0x10000 + (low16 % 0x100000000)
    this.fixed32(lowWord >>> 0)
    return this.fixed32((Math.floor(high / 0x10000) + Math.floor(low16 / 0x100000000) + Math.floor(lowWord / 0x100000000)) >>> 0)
  }

  /** Trace id (field 1) and span id (field 2) as bytes. */
  ids(context: SpanContext): void {
    this.tag(1, LENGTH).hex(context.traceId)
    this.tag(2, LENGTH).hex(context.spanId)
  }

  /** A hex id as length-prefixed bytes. */
  hex(id: string): this {
    const length = id.length >> 1
    this.varint(length).room(length)
    const buffer = this.buffer
    let pos = this.pos
    for (let index = 0; index < 2 * length; index += 2) buffer[pos++] = (nibble(id.charCodeAt(index)) << 4) | nibble(id.charCodeAt(index + 1))
    this.pos = pos
    return this
  }

  /** A length-prefixed UTF-8 string; ASCII is copied by hand. */
  string(text: string): this {
    const length = text.length
    let ascii = length < 0x80
    if (ascii) {
      for (let index = 0; index < length; index++) if (text.charCodeAt(index) > 0x7f) { ascii = false; break }
    }
    if (ascii) {
      this.room(length + 1)
      const buffer = this.buffer
      let pos = this.pos
      buffer[pos++] = length
      for (let index = 0; index < length; index++) buffer[pos++] = text.charCodeAt(index)
      this.pos = pos
      return this
    }
    const bytes = Buffer.byteLength(text, 'utf8')
    this.varint(bytes).room(bytes)
    this.pos += Buffer.from(this.buffer.buffer, this.buffer.byteOffset, this.buffer.byteLength).write(text, this.pos, 'utf8')
    return this
  }

  raw(bytes: Uint8Array): this {
    const length = bytes.length
    this.room(length)
    if (length > 64) {
      this.buffer.set(bytes, this.pos)
      this.pos += length
      return this
    }
    // A short copy by hand: `set` costs more than it moves at this size.
    const buffer = this.buffer
    let pos = this.pos
    for (let index = 0; index < length; index++) buffer[pos++] = bytes[index]!
    this.pos = pos
    return this
  }

  /** Starts a length-delimited message as field `field`: one byte kept for its length. */
  begin(field: number): number {
    this.tag(field, LENGTH).room(1)
    return this.pos++
  }

  /** Ends the message `begin` started: its length in place, the body moved on if the length needs more than a byte. */
  end(at: number): void {
    const length = this.pos - at - 1
    if (length < 0x80) {
      this.buffer[at] = length
      return
    }
    const size = varintSize(length)
    this.room(size - 1)
    this.buffer.copyWithin(at + size, at + 1, this.pos)
    this.pos += size - 1
    const end = this.pos
    this.pos = at
    this.varint(length)
    this.pos = end
  }

  /** Each attribute as a KeyValue in field `field`. */
  attributes(field: number, attributes: Attributes): void {
    for (const key in attributes) {
      if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue
      const value = attributes[key]
      const cached = keyValue(key, value)
      this.tag(field, LENGTH)
      if (cached !== null) {
        this.varint(cached.length).raw(cached)
        continue
      }
      const start = this.room(1).pos++
      this.keyValue(key, value)
      this.end(start)
    }
  }

  keyValue(key: string, value: AttributeValue | undefined): void {
    this.tag(1, LENGTH).string(key)
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
        else this.tag(4, FIXED64).double(value)
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

  private double(value: number): void {
    scratch[0] = value
    this.raw(scratchBytes)
  }

  private room(bytes: number): this {
    if (this.pos + bytes <= this.buffer.length) return this
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.pos + bytes))
    grown.set(this.buffer.subarray(0, this.pos))
    this.buffer = grown
    return this
  }
}

/** The encoded KeyValue for a name and value, kept while the name has few values; null when not kept. */
function keyValue(key: string, value: AttributeValue | undefined): Uint8Array | null {
  if (value === undefined || typeof value === 'object') return null
  let values = encoded.get(key)
  if (values === null) return null
  if (values === undefined) {
    if (encoded.size >= NAMES) return null
    encoded.set(key, (values = new Map()))
  }
  let bytes = values.get(value)
  if (bytes === undefined) {
    if (values.size >= VALUES_PER_NAME) {
      encoded.set(key, null)
      return null
    }
    const writer = new Writer(key.length + 32)
    writer.keyValue(key, value)
    bytes = writer.bytes().slice()
    values.set(value, bytes)
  }
  return bytes
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

function nibble(code: number): number {
  return code <= 0x39 ? code - 0x30 : (code | 0x20) - 0x57
}
