import { describe, expect, it } from 'vitest'
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api'
import { ExportResultCode } from '@opentelemetry/core'
import type { IOtlpExportDelegate } from '@opentelemetry/otlp-exporter-base'
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { batchOptionsFromEnv, EncodingSpanProcessor, ExportHealth, type EncodedBatch } from './span-export.ts'
import { childSpan, rootSpan, samplerFromEnv, SharedSets, type SpanMaker } from './spans.ts'

/** A transport that keeps what it is given; `hold` keeps each export in flight until released; `fail` answers each with the collector's refusal. */
function transport(hold = false, fail = () => false) {
  const sent: EncodedBatch[] = []
  const pending: (() => void)[] = []
  const delegate: IOtlpExportDelegate<EncodedBatch> = {
    export(batch, done) {
      sent.push(batch)
      const finish = () => done(fail() ? { code: ExportResultCode.FAILED, error: new Error('connect ECONNREFUSED 127.0.0.1:4318') } : { code: ExportResultCode.SUCCESS })
      if (hold) pending.push(finish)
      else finish()
    },
    forceFlush: async () => {},
    shutdown: async () => {},
    setMetrics: () => {},
  }
  return { delegate, sent, release: () => pending.splice(0).forEach((finish) => finish()) }
}

const CALLER = trace.setSpanContext(ROOT_CONTEXT, { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true })
const ROUTE = ['http.request.method', 'http.route']
const TARGET = ['switchboard.provider', 'switchboard.key_name', 'gen_ai.request.model']

function requests(processor: EncodingSpanProcessor, count: number) {
  const memory = new InMemorySpanExporter()
  const maker: SpanMaker = { resource: resourceFromAttributes({ 'service.name': 'switchboard' }), scope: { name: '@switchboard/gateway', version: '0.1.0' }, sampler: samplerFromEnv({}), processors: [processor, new SimpleSpanProcessor(memory)], valueLengthLimit: Infinity, shared: new SharedSets() }
  for (let index = 0; index < count; index++) {
    // Every other request continues a caller's trace: its ids come from the traceparent.
    const server = rootSpan(maker, 'POST /v1/chat/completions', SpanKind.SERVER, index % 2 === 0 ? null : CALLER)
    server.setShared(ROUTE, ['POST', '/v1/chat/completions'])
    server.setAttribute('switchboard.request_id', `r-${index}`)
    const client = childSpan(server, 'chat gpt-4o', SpanKind.CLIENT, undefined)
    // Shared sets, one with a model name too long to keep (set one by one instead).
    client.setShared(TARGET, ['openai', `key-${index % 3}`, index === 1 ? 'm'.repeat(200) : 'gpt-4o'])
    client.setAttribute('gen_ai.usage.input_tokens', index * 100)
    client.addEvent('switchboard.key.skipped', { 'switchboard.key_name': 'held' })
    client.end()
    server.end()
  }
  return memory.getFinishedSpans()
}

describe('exporting spans encoded as they end', () => {
  it('sends the bytes the official serializer makes of the same spans, a full batch at once and the rest on flush', async () => {
    const { delegate, sent } = transport()
    const processor = new EncodingSpanProcessor(delegate, { maxBatch: 8, delayMs: 60_000, maxQueue: 100 })
    const spans = requests(processor, 7)
    expect(sent.map((batch) => batch.spans)).toEqual([8])
    await processor.forceFlush()
    expect(sent.map((batch) => batch.spans)).toEqual([8, 6])
    expect(Buffer.from(sent[0]!.body).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans.slice(0, 8))!))).toBe(true)
    expect(Buffer.from(sent[1]!.body).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans.slice(8))!))).toBe(true)
    await processor.shutdown()
  })

  it('sends one batch at a time, and drops and counts spans past the queue while the collector is slow', async () => {
    const { delegate, sent, release } = transport(true)
    const processor = new EncodingSpanProcessor(delegate, { maxBatch: 4, delayMs: 60_000, maxQueue: 10 })
    requests(processor, 10)
    expect(sent.map((batch) => batch.spans)).toEqual([4])
    expect(processor.dropped).toBe(10)
    release()
    expect(sent.map((batch) => batch.spans)).toEqual([4, 4])
    release()
    const flushed = processor.forceFlush()
    release()
    await flushed
    expect(sent.map((batch) => batch.spans)).toEqual([4, 4, 2])
  })

  it('sends a batch that is not full once the delay has passed', async () => {
    const { delegate, sent } = transport()
    const processor = new EncodingSpanProcessor(delegate, { maxBatch: 512, delayMs: 20, maxQueue: 2048 })
    requests(processor, 2)
    expect(sent).toEqual([])
    await expect.poll(() => sent.map((batch) => batch.spans)).toEqual([4])
  })

  it('reads the batch processor variables, with the SDK defaults', () => {
    expect(batchOptionsFromEnv({})).toEqual({ maxBatch: 512, delayMs: 5000, maxQueue: 2048 })
    expect(batchOptionsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4096', OTEL_BSP_MAX_QUEUE_SIZE: '1000' })).toEqual({ maxBatch: 1000, delayMs: 100, maxQueue: 1000 })
    expect(batchOptionsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: 'soon' }).delayMs).toBe(5000)
  })

  it('counts the spans of a failed export and tells the log when exports fail, at most once a minute, and when they succeed again', async () => {
    let down = true
    let clock = 0
    const lines: string[] = []
    const health = new ExportHealth((level, message) => lines.push(`${level}: ${message}`), () => clock)
    const { delegate } = transport(false, () => down)
    const processor = new EncodingSpanProcessor(delegate, { maxBatch: 4, delayMs: 60_000, maxQueue: 100 }, health)
    requests(processor, 4)
    expect(health.failedSpans).toBe(8)
    expect(lines).toEqual(['warn: traces: an export to the collector failed (connect ECONNREFUSED 127.0.0.1:4318); its 4 spans are lost (4 in all so far)'])
    clock = 59_000
    requests(processor, 2)
    expect(lines).toHaveLength(1)
    clock = 61_000
    requests(processor, 2)
    expect(lines).toHaveLength(2)
    expect(lines[1]).toContain('(16 in all so far)')
    down = false
    requests(processor, 2)
    expect(lines[2]).toBe('info: traces: the collector takes spans again (16 lost in all so far)')
    expect(health.failing).toBe(false)
    await processor.shutdown()
  })

  it('does not wait for a failing collector when the node stops: what is buffered is counted lost', async () => {
    const health = new ExportHealth(() => {})
    const { delegate, sent } = transport(true, () => true)
    const processor = new EncodingSpanProcessor(delegate, { maxBatch: 4, delayMs: 60_000, maxQueue: 100 }, health)
    health.settled({ code: ExportResultCode.FAILED, error: new Error('timeout') }, 0)
    requests(processor, 3)
    // One export in flight (held by the transport), one batch of 2 open: shutdown returns without either.
    await processor.shutdown()
    expect(sent.map((batch) => batch.spans)).toEqual([4])
    expect(health.failedSpans).toBe(2)
  })
})
