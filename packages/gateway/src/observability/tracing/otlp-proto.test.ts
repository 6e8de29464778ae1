import { describe, expect, it } from 'vitest'
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { SpanBatch } from './otlp-proto.ts'
import { childSpan, rootSpan, samplerFromEnv, SharedSets, type RequestSpan, type SpanMaker } from './spans.ts'

/** The request body the node sends for these spans (one resource and scope, as a node's are). */
function exportRequest(spans: readonly ReadableSpan[]): Uint8Array {
  const batch = new SpanBatch(spans[0]!.resource, spans[0]!.instrumentationScope)
  for (const span of spans) batch.add(span as RequestSpan)
  return batch.take()
}

const CALLER = trace.setSpanContext(ROOT_CONTEXT, { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true })

/** Our spans with every kind of value, event, link and status the official serializer takes. */
function finished(count: number): ReadableSpan[] {
  const memory = new InMemorySpanExporter()
  const resource = resourceFromAttributes({ 'service.name': 'switchboard', 'switchboard.region': 'eu-west' })
  const maker: SpanMaker = { resource, scope: { name: '@switchboard/gateway', version: '0.1.0' }, sampler: samplerFromEnv({}), processors: [new SimpleSpanProcessor(memory)], valueLengthLimit: Infinity, shared: new SharedSets() }
  for (let index = 0; index < count; index++) {
    const server = rootSpan(maker, 'POST /v1/chat/completions', SpanKind.SERVER, index % 2 === 0 ? null : CALLER)
    server.setShared(['http.request.method', 'http.response.status_code'], ['POST', 200 + (index % 3)])
    server.setAttribute('switchboard.request_id', `req-${index}-${'x'.repeat(index % 3 === 0 ? 200 : 4)}`)
    const values = { 'gen_ai.usage.input_tokens': index * 1000, 'switchboard.stream': index % 2 === 0, 'ratio': index / 7, 'negative': -index - 1, 'fallbacks': ['openai/gpt-4o', 'anthropic/claude'], 'note': 'naïve – ünïcode ✓' }
    for (const [name, value] of Object.entries(values)) server.setAttribute(name, value)
    server.addEvent('switchboard.key_skipped', { 'switchboard.key_name': `key-${index % 5}` })
    // A span over 16 KiB (a recorded body): its length takes three bytes, not the two kept.
    if (index === 2) server.setAttribute('switchboard.request.body', 'b'.repeat(20_000))
    const link = { context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true }, attributes: { 'switchboard.link': 'hold_placed' } }
    const client = childSpan(server, 'chat gpt-4o-mini', SpanKind.CLIENT, index % 2 === 0 ? [link] : undefined)
    client.setAttribute('http.response.status_code', index % 4 === 0 ? 429 : 200)
    if (index % 4 === 0) client.setStatus({ code: SpanStatusCode.ERROR, message: 'rate_limited' })
    client.end()
    server.end()
  }
  return memory.getFinishedSpans()
}

describe('OTLP protobuf encoding', () => {
  it('writes the bytes the official serializer writes', () => {
    for (const count of [1, 3, 40, 300]) {
      const spans = finished(count)
      expect(Buffer.from(exportRequest(spans)).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!))).toBe(true)
    }
  })

  it('writes the same bytes again once names and shared sets are kept', () => {
    const spans = finished(80)
    const first = Buffer.from(exportRequest(spans))
    expect(Buffer.from(exportRequest(spans)).equals(first)).toBe(true)
  })

  it('writes times as the nanoseconds the span reads them as', () => {
    const millis = [0, 1999.999999, 1_765_000_000_123.4568, 4_294_967_295_999.999, 65_536_000.000001]
    for (const at of millis) {
      const span = Object.assign(finished(1)[0]!, { startMs: at, endMs: at })
      expect(Buffer.from(exportRequest([span])).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest([span])!))).toBe(true)
    }
  })
})
