/**
 * Finished spans as an OTLP/HTTP protobuf body (ExportTraceServiceRequest), for the official
 * OTLP exporter's transport: the bytes the official serializer writes, field for field, in about
 * a third of its CPU (bench/README.md, "Tracing"; the writer: protobuf-writer.ts).
 *
 * The wire format: https://protobuf.dev/programming-guides/encoding/ ; the messages:
 * opentelemetry-proto's trace/v1/trace.proto and common/v1/common.proto (field numbers below).
 */
import type { Link } from '@opentelemetry/api'
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base'
import { FIXED32, FIXED64, LENGTH, VARINT, Writer } from './protobuf-writer.ts'
import type { RequestSpan } from './spans.ts'

/** OTLP span flags: the W3C flags, and that the parent's remoteness is known (and whether it is remote). */
const HAS_IS_REMOTE = 0x100
const IS_REMOTE = 0x200

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

  add(span: RequestSpan): void {
    writeSpan(this.body, span)
    this.count++
  }

  /** The ExportTraceServiceRequest of the spans added so far; the batch starts over. */
  take(): Uint8Array {
    const spans = this.body.bytes()
    const out = new Writer(spans.length + 1024)
    // ResourceSpans (field 1): its resource (attributes 1, dropped count 2), then ScopeSpans (field
    // 2): its scope (name 1, version 2), then the spans (field 2); each ends with its schema URL (3).
    const resourceSpans = out.begin(1)
    const resource = out.begin(1)
    out.attributes(1, this.resource.attributes)
    out.tag(2, VARINT).varint(0)
    out.end(resource)
    const scopeSpans = out.begin(2)
    const scope = out.begin(1)
    out.tag(1, LENGTH).string(this.scope.name)
    if (this.scope.version) out.tag(2, LENGTH).string(this.scope.version)
    out.end(scope)
    out.raw(spans)
    for (const [schemaUrl, start] of [[this.scope.schemaUrl, scopeSpans], [this.resource.schemaUrl, resourceSpans]] as const) {
      if (schemaUrl) out.tag(3, LENGTH).string(schemaUrl)
      out.end(start)
    }
    // The spans are copied out: the same buffer takes the next batch's.
    this.body.reset()
    this.count = 0
    return out.bytes()
  }
}

type Resource = ReadableSpan['resource']
type Scope = ReadableSpan['instrumentationScope']

/** By span kind, then name: the span's name (field 5) and kind (field 6), encoded; a node's span names are few (a route's, an operation and model's). */
const heads = [0, 1, 2, 3, 4].map(() => new Map<string, Uint8Array>())

function headOf(name: string, kind: number): Uint8Array {
  let head = heads[kind]!.get(name)
  if (head === undefined) {
    head = new Uint8Array(new Writer(name.length * 3 + 16).tag(5, LENGTH).string(name).tag(6, VARINT).varint(kind + 1).bytes())
    if (heads[kind]!.size < 1024) heads[kind]!.set(name, head)
  }
  return head
}

/** Fields 10 to 15 of a span with no events, no links and no status: the counts dropped 0, the status unset. */
const QUIET = Uint8Array.of(10 << 3, 0, 12 << 3, 0, 14 << 3, 0, (15 << 3) | LENGTH, 2, 3 << 3, 0)

/** One of our spans (spans.ts), the only kind the node encodes: its ids from their bytes, its shared attributes as they were encoded, no counts dropped. */
function writeSpan(out: Writer, span: RequestSpan): void {
  // Two bytes kept for the span's length: most spans are 128 bytes to 16 KiB long.
  const start = out.begin(2, 2)
  const context = span.spanContext()
  const parent = span.parentSpanContext
  out.tag(1, LENGTH).copy(span.ids, span.idsAt, 16).tag(2, LENGTH).copy(span.ids, span.idsAt + 16, 8)
  const state = context.traceState?.serialize()
  if (state) out.tag(3, LENGTH).string(state)
  if (parent !== undefined) out.tag(4, LENGTH).copy(span.ids, span.idsAt + 24, 8)
  out.raw(headOf(span.name, span.kind))
  out.tag(7, FIXED64).millis(span.startMs).tag(8, FIXED64).millis(span.endMs)
  out.list(9, span.parts)
  const status = span.status
  if (span.events.length + span.links.length === 0 && status.code === 0) {
    out.raw(QUIET)
  } else {
    out.tag(10, VARINT).varint(0)
    for (const event of span.events) writeEvent(out, event)
    out.tag(12, VARINT).varint(0)
    for (const link of span.links) writeLink(out, link)
    out.tag(14, VARINT).varint(0)
    const written = out.begin(15)
    if (status.message) out.tag(2, LENGTH).string(status.message)
    out.tag(3, VARINT).varint(status.code)
    out.end(written)
  }
  out.tag(16, FIXED32).fixed32(flags(context.traceFlags, parent?.isRemote))
  out.end(start, 2)
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
  out.tag(1, LENGTH).copy(Buffer.from(context.traceId, 'hex'), 0, 16).tag(2, LENGTH).copy(Buffer.from(context.spanId, 'hex'), 0, 8)
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
