/**
 * The spans of a node's requests: OpenTelemetry's span model (the SDK's `ReadableSpan`, samplers
 * and span processors) with a span object of our own in place of the SDK's, which validates and
 * counts every attribute and goes through the context API for every parent. Ours are set by this
 * package only (names from names.ts, values of the kinds OTLP takes): a plain record, with its ids
 * as bytes and the attributes many spans share as bytes encoded once (SharedAttributes), for the
 * encoder. Kept from the SDK: sampling by `OTEL_TRACES_SAMPLER` with its samplers, W3C ids, the
 * processors and exporter, `OTEL_(SPAN_)ATTRIBUTE_VALUE_LENGTH_LIMIT` (not the count limits: a
 * request's spans carry a fixed few dozen attributes). Processors are told of a span's end only
 * (the SDK's and ours do nothing at its start).
 */
import { randomFillSync } from 'node:crypto'
import { ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type AttributeValue, type Context, type HrTime, type Link, type SpanContext, type SpanStatus } from '@opentelemetry/api'
import type { InstrumentationScope } from '@opentelemetry/core'
import type { Resource } from '@opentelemetry/resources'
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type ReadableSpan, type Sampler, type SpanProcessor, type TimedEvent } from '@opentelemetry/sdk-trace-base'
import { Writer } from './protobuf-writer.ts'

/** The sampler `OTEL_TRACES_SAMPLER` (and `_ARG`) names, as the SDK reads them; parentbased_always_on by default. */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG?.trim() || Number.NaN)
  const ratio = (): number => (arg >= 0 && arg <= 1 ? arg : 1)
  switch (env.OTEL_TRACES_SAMPLER?.trim().toLowerCase()) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'traceidratio': return new TraceIdRatioBasedSampler(ratio())
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) })
    default: return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

export interface SpanMaker {
  resource: Resource
  scope: InstrumentationScope
  sampler: Sampler
  processors: readonly SpanProcessor[]
  /** Longest string attribute value kept (`OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`); Infinity when unset. */
  valueLengthLimit: number
  /** The attribute sets spans share (`RequestSpan.setShared`). */
  shared: SharedSets
}

/**
 * Attributes many spans carry alike (a route's, an attempt target's), encoded once as the span's
 * OTLP KeyValues (field 9), so a span that carries them costs one copy when it ends.
 */
export class SharedAttributes {
  readonly bytes: Uint8Array
  readonly attributes: Attributes = {}

  constructor(names: readonly string[], values: readonly AttributeValue[], valueLengthLimit: number) {
    names.forEach((name, index) => {
      const value = values[index]!
      this.attributes[name] = typeof value === 'string' && value.length > valueLengthLimit ? value.slice(0, valueLengthLimit) : value
    })
    const writer = new Writer(512)
    writer.attributes(9, this.attributes)
    this.bytes = new Uint8Array(writer.bytes())
  }
}

type SharedNode = Map<unknown, SharedNode | SharedAttributes>

/**
 * Shared attribute sets by their names and values: the last one found for each list of names (a
 * node serves the same route, target and key over and over), else a tree of Maps, one level per
 * value (the values' own strings hashed, no key built per span). Bounded: a set with a string over
 * 128 characters (a caller's model can be anything) is not kept; all start over past 4,096 sets.
 */
export class SharedSets {
  private root: SharedNode = new Map()
  private size = 0
  private readonly last = new Map<readonly string[], { values: readonly AttributeValue[]; set: SharedAttributes }>()

  get(names: readonly string[], values: readonly AttributeValue[], valueLengthLimit: number): SharedAttributes | undefined {
    const last = this.last.get(names)
    if (last !== undefined && sameValues(last.values, values)) return last.set
    for (const value of values) if (typeof value === 'string' && value.length > 128) return undefined
    let node = this.root
    let key: unknown = names
    for (const value of values) {
      let next = node.get(key) as SharedNode | undefined
      if (next === undefined) node.set(key, (next = new Map()))
      node = next
      key = value
    }
    let set = node.get(key) as SharedAttributes | undefined
    if (set === undefined) {
      if (++this.size > 4096) {
        this.root = new Map()
        this.size = 0
      }
      node.set(key, (set = new SharedAttributes(names, values, valueLengthLimit)))
    }
    this.last.set(names, { values, set })
    return set
  }
}

function sameValues(these: readonly AttributeValue[], those: readonly AttributeValue[]): boolean {
  for (let index = 0; index < these.length; index++) if (these[index] !== those[index]) return false
  return true
}

/**
 * A request's root span, a child of the caller's span when its traceparent carried one. The
 * sampler decides here; the request's other spans take this one's decision, which is what every
 * standard sampler decides for a span whose parent is local.
 */
export function rootSpan(maker: SpanMaker, name: string, kind: SpanKind, remoteParent: Context | null): RequestSpan {
  const parent = remoteParent === null ? undefined : trace.getSpanContext(remoteParent)
  const at = drawIds()
  const ids = block
  let traceId = blockHex.slice(2 * at, 2 * at + 32)
  if (parent !== undefined) {
    traceId = parent.traceId
    ids.write(traceId, at, 'hex')
    ids.write(parent.spanId, at + 24, 'hex')
  }
  const result = maker.sampler.shouldSample(remoteParent ?? ROOT_CONTEXT, traceId, name, kind, NO_ATTRIBUTES, NO_LINKS)
  const sampled = result.decision === SamplingDecision.RECORD_AND_SAMPLED
  const context: SpanContext = { traceId, spanId: blockHex.slice(2 * at + 32, 2 * at + 48), traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, traceState: result.traceState ?? parent?.traceState }
  return new RequestSpan(maker, name, kind, context, parent, result.decision !== SamplingDecision.NOT_RECORD, undefined, ids, at)
}

/** A span under `parent` (on this node), sampled as its parent is. */
export function childSpan(parent: RequestSpan, name: string, kind: SpanKind, links: Link[] | undefined): RequestSpan {
  const up = parent.spanContext()
  const at = drawIds()
  const ids = block
  // The trace id and the parent's span id, as bytes, where the encoder reads this span's.
  const from = parent.ids
  const fromAt = parent.idsAt
  for (let index = 0; index < 16; index++) ids[at + index] = from[fromAt + index]!
  for (let index = 0; index < 8; index++) ids[at + 24 + index] = from[fromAt + 16 + index]!
  const context: SpanContext = { traceId: up.traceId, spanId: blockHex.slice(2 * at + 32, 2 * at + 48), traceFlags: up.traceFlags, traceState: up.traceState }
  return new RequestSpan(parent.maker, name, kind, context, up, parent.isRecording(), links, ids, at)
}

const NO_EVENTS: TimedEvent[] = []
const NO_LINKS: Link[] = []
const NO_ATTRIBUTES: Attributes = {}
const UNSET: SpanStatus = { code: SpanStatusCode.UNSET }

/** One span: written by the request path (request-trace.ts), read as the SDK's ReadableSpan by the processors and the exporter. */
export class RequestSpan implements ReadableSpan {
  /** The attributes as set, in one array: a shared set (its names never set one by one too), or a name and its value. */
  readonly parts: (SharedAttributes | string | AttributeValue)[] = []
  events: TimedEvent[] = NO_EVENTS
  readonly links: Link[]
  status = UNSET
  /** Wall-clock milliseconds (a double, at the monotonic clock's resolution); HrTime only for the SDK's readers. */
  readonly startMs: number
  endMs = 0
  ended = false
  readonly droppedAttributesCount = 0
  readonly droppedEventsCount = 0
  readonly droppedLinksCount = 0

  constructor(
    readonly maker: SpanMaker,
    readonly name: string,
    readonly kind: SpanKind,
    private readonly context: SpanContext,
    readonly parentSpanContext: SpanContext | undefined,
    private readonly recording: boolean,
    links: Link[] | undefined,
    /** The span's ids as bytes (drawIds): the trace id, its span id, its parent's span id, from `idsAt`. */
    readonly ids: Buffer,
    readonly idsAt: number,
  ) {
    this.links = links ?? NO_LINKS
    this.startMs = origin + performance.now()
  }

  get resource(): Resource {
    return this.maker.resource
  }

  get startTime(): HrTime {
    return hrTime(this.startMs)
  }

  get endTime(): HrTime {
    return hrTime(this.endMs)
  }

  /** The attributes as one object, for the SDK's processors and exporters (the protobuf encoder reads the parts). */
  get attributes(): Attributes {
    const attributes: Attributes = {}
    const parts = this.parts
    for (let index = 0; index < parts.length; index++) {
      const part = parts[index]
      if (part instanceof SharedAttributes) Object.assign(attributes, part.attributes)
      else attributes[part as string] = parts[++index] as AttributeValue
    }
    return attributes
  }

  get instrumentationScope(): InstrumentationScope {
    return this.maker.scope
  }

  get duration(): HrTime {
    const nanos = Math.round((this.endMs - this.startMs) * 1e6)
    return [Math.floor(nanos / 1e9), nanos % 1e9]
  }

  spanContext(): SpanContext {
    return this.context
  }

  isRecording(): boolean {
    return this.recording && !this.ended
  }

  setAttribute(key: string, value: AttributeValue | null | undefined): this {
    if (value === undefined || value === null || !this.isRecording()) return this
    const kept = typeof value === 'string' && value.length > this.maker.valueLengthLimit ? value.slice(0, this.maker.valueLengthLimit) : value
    const parts = this.parts
    for (let index = 0; index < parts.length; index++) {
      // A name is a string; a shared set is not, and takes one place.
      if (typeof parts[index] !== 'string') continue
      if (parts[index++] === key) {
        parts[index] = kept
        return this
      }
    }
    parts.push(key, kept)
    return this
  }

  /** Sets attributes many spans set alike (names: a constant list); encoded once for all of them (SharedAttributes). */
  setShared(names: readonly string[], values: readonly AttributeValue[]): this {
    if (!this.isRecording()) return this
    const set = this.maker.shared.get(names, values, this.maker.valueLengthLimit)
    if (set === undefined) names.forEach((name, index) => this.setAttribute(name, values[index]))
    else this.parts.push(set)
    return this
  }

  addEvent(name: string, attributes: Attributes = NO_ATTRIBUTES): this {
    if (!this.isRecording()) return this
    if (this.events === NO_EVENTS) this.events = []
    this.events.push({ name, attributes, time: hrTime(origin + performance.now()), droppedAttributesCount: 0 })
    return this
  }

  setStatus(status: SpanStatus): this {
    if (this.isRecording() && status.code !== SpanStatusCode.UNSET) this.status = status
    return this
  }

  end(): void {
    if (this.ended) return
    this.endMs = origin + performance.now()
    this.ended = true
    if (this.recording) for (const processor of this.maker.processors) processor.onEnd(this)
  }
}

/** Wall-clock milliseconds (`origin + performance.now()`) as HrTime; the encoder splits them alike (protobuf-writer.ts `time`). */
const origin = performance.timeOrigin
export function hrTime(millis: number): HrTime {
  const seconds = Math.floor(millis / 1000)
  const nanos = Math.round((millis - seconds * 1000) * 1e6)
  return nanos >= 1e9 ? [seconds + 1, nanos - 1e9] : [seconds, nanos]
}

/**
 * Ids: each span draws 32 bytes from a block of random bytes (crypto-grade, 4 KiB, turned into
 * hex at once; a new block once one is used up, so a span's bytes stay put): its trace id (a
 * child's or a remote parent's written over), its own span id and its parent's. The hex ids are
 * slices of the block's hex; the encoder copies the bytes. An all-zero id is invalid in W3C and
 * drawn again.
 */
let block = Buffer.alloc(0)
let blockHex = ''
let used = 0
function drawIds(): number {
  for (;;) {
    if (used + 32 > block.length) {
      block = randomFillSync(Buffer.allocUnsafe(4096))
      blockHex = block.toString('hex')
      used = 0
    }
    const at = used
    used += 32
    if (!zero(at, at + 16) && !zero(at + 16, at + 24)) return at
  }
}

function zero(from: number, to: number): boolean {
  for (let index = from; index < to; index++) if (block[index] !== 0) return false
  return true
}
