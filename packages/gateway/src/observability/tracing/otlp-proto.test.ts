import { describe, expect, it } from 'vitest'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { SpanBatch } from './otlp-proto.ts'

/** The request body the node sends for these spans (one resource and scope, as a node's are). */
function exportRequest(spans: readonly ReadableSpan[]): Uint8Array {
  const batch = new SpanBatch(spans[0]!.resource, spans[0]!.instrumentationScope)
  for (const span of spans) batch.add(span)
  return batch.take()
}

function finished(count: number): ReadableSpan[] {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'switchboard', 'switchboard.region': 'eu-west' }), spanProcessors: [new SimpleSpanProcessor(memory)] })
  const tracer = provider.getTracer('@switchboard/gateway', '0.1.0')
  for (let index = 0; index < count; index++) {
    const server = tracer.startSpan('POST /v1/chat/completions', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'POST', 'switchboard.request_id': `req-${index}-${'x'.repeat(index % 3 === 0 ? 200 : 4)}` } })
    server.setAttributes({ 'gen_ai.usage.input_tokens': index * 1000, 'switchboard.stream': index % 2 === 0, 'ratio': index / 7, 'negative': -index - 1, 'fallbacks': ['openai/gpt-4o', 'anthropic/claude'], 'note': 'naïve – ünïcode ✓' })
    server.addEvent('switchboard.key_skipped', { 'switchboard.key_name': `key-${index % 5}` })
    const client = tracer.startSpan('chat gpt-4o-mini', {
      kind: SpanKind.CLIENT,
      links: [{ context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true }, attributes: { 'switchboard.link': 'hold_placed' } }],
    })
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

  it('writes the same bytes again once attribute encodings are kept', () => {
    const spans = finished(80)
    const first = Buffer.from(exportRequest(spans))
    expect(Buffer.from(exportRequest(spans)).equals(first)).toBe(true)
  })

  it('writes times as exact nanoseconds', () => {
    const spans = finished(1)
    const times: [number, number][] = [[0, 0], [1, 999_999_999], [1_765_000_000, 123_456_789], [4_294_967_295, 999_999_999], [65_536, 1]]
    for (const time of times) {
      const span = { ...spans[0]!, spanContext: spans[0]!.spanContext, startTime: time, endTime: time } as ReadableSpan
      expect(Buffer.from(exportRequest([span])).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest([span])!))).toBe(true)
    }
  })
})
