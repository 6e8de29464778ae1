import { describe, expect, it } from 'vitest'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { childSpan, rootSpan, samplerFromEnv, SharedSets, type SpanMaker } from './spans.ts'

function maker(env: NodeJS.ProcessEnv = {}, valueLengthLimit = Infinity) {
  const exporter = new InMemorySpanExporter()
  const made: SpanMaker = { resource: resourceFromAttributes({ 'service.name': 'switchboard' }), scope: { name: 'test' }, sampler: samplerFromEnv(env), processors: [new SimpleSpanProcessor(exporter)], valueLengthLimit, shared: new SharedSets() }
  return { made, exporter }
}

describe('spans', () => {
  it('gives a child the trace, the parent id and the sampling of its parent, and exports both once ended', () => {
    const { made, exporter } = maker()
    const server = rootSpan(made, 'POST /v1/chat/completions', SpanKind.SERVER, null)
    const client = childSpan(server, 'chat gpt-4o', SpanKind.CLIENT, undefined)
    expect(server.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(server.spanContext().spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(client.spanContext().traceId).toBe(server.spanContext().traceId)
    expect(client.parentSpanContext?.spanId).toBe(server.spanContext().spanId)
    expect(client.spanContext().spanId).not.toBe(server.spanContext().spanId)
    client.setStatus({ code: SpanStatusCode.ERROR, message: 'rate_limited' })
    client.end()
    server.end()
    server.setAttribute('late', 1)
    const spans = exporter.getFinishedSpans()
    expect(spans.map((span) => span.name)).toEqual(['chat gpt-4o', 'POST /v1/chat/completions'])
    expect(spans[1]!.attributes).toEqual({})
    expect(spans[0]!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'rate_limited' })
    const [seconds, nanos] = spans[1]!.duration
    expect(seconds).toBe(0)
    expect(nanos).toBeGreaterThanOrEqual(0)
    expect(Math.abs(spans[1]!.startTime[0] - Date.now() / 1000)).toBeLessThan(5)
  })

  it('samples by OTEL_TRACES_SAMPLER: an unsampled root makes non-recording spans that keep their ids and export nothing', () => {
    const { made, exporter } = maker({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' })
    const server = rootSpan(made, 'POST /v1/responses', SpanKind.SERVER, null)
    const client = childSpan(server, 'responses gpt-4o', SpanKind.CLIENT, undefined)
    expect(server.isRecording()).toBe(false)
    expect(client.isRecording()).toBe(false)
    expect(client.spanContext().traceFlags & 1).toBe(0)
    client.setAttribute('a', 1)
    client.end()
    server.end()
    expect(exporter.getFinishedSpans()).toEqual([])
    expect(rootSpan(maker({ OTEL_TRACES_SAMPLER: 'always_off' }).made, 'x', SpanKind.SERVER, null).isRecording()).toBe(false)
    expect(rootSpan(maker({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' }).made, 'x', SpanKind.SERVER, null).isRecording()).toBe(true)
  })

  it('cuts string attributes to OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT and skips null ones', () => {
    const { made, exporter } = maker({}, 8)
    const span = rootSpan(made, 'x', SpanKind.SERVER, null)
    span.setShared(['shared.long', 'shared.short'], ['abcdefghijkl', 'abc'])
    for (const [name, value] of Object.entries({ long: 'abcdefghijkl', short: 'abc', count: 123456789, list: ['a', 'b'] })) span.setAttribute(name, value)
    span.setAttribute('nothing', undefined)
    span.setAttribute('count', 7)
    span.addEvent('switchboard.key.skipped', { 'switchboard.key_name': 'k' })
    span.end()
    const [finished] = exporter.getFinishedSpans()
    expect(finished!.attributes).toEqual({ 'shared.long': 'abcdefgh', 'shared.short': 'abc', long: 'abcdefgh', short: 'abc', count: 7, list: ['a', 'b'] })
    expect(Object.keys(finished!.attributes)).toEqual(['shared.long', 'shared.short', 'long', 'short', 'count', 'list'])
    expect(finished!.events.map((event) => [event.name, event.attributes])).toEqual([['switchboard.key.skipped', { 'switchboard.key_name': 'k' }]])
  })
})
