/**
 * What tracing costs one request (issue 40), in one process: the span work of a request as the
 * pipeline and the engine do it (the SERVER span, one CLIENT span, their attributes), batched by
 * the batch processor and encoded for export (then dropped: the HTTP send of a 512-span batch is
 * left out). CPU of this process (user + system) over N requests, flushes included. The encoders
 * take turns round by round, so a busy machine weighs on each alike: the node's protobuf encoder
 * (otlp-proto.ts), the official protobuf and JSON serializers (@opentelemetry/otlp-transformer),
 * and none (the span work alone). Prints each one's median and best round, and the bytes each
 * allocates per request (V8's sampling heap profiler, counting what the GC has collected too: a
 * figure the machine's load does not move, unlike CPU time).
 *
 *   node --import tsx bench/data-plane/tracing-micro.ts [--requests 5000] [--rounds 8]
 */
import { Session } from 'node:inspector/promises'
import { parseArgs } from 'node:util'
import { ExportResultCode } from '@opentelemetry/core'
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import type { IOtlpExportDelegate } from '@opentelemetry/otlp-exporter-base'
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base'
import { EncodingSpanProcessor, type EncodedBatch } from '../../packages/gateway/src/observability/tracing/span-export.ts'
import type { DispatchStep } from '../../packages/gateway/src/dispatch/dispatcher.ts'
import { createTracing } from '../../packages/gateway/src/observability/tracing/setup.ts'

const { values } = parseArgs({ options: { requests: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '8' } } })
const requests = Number(values.requests)
const rounds = Number(values.rounds)
if (!(requests >= 500) || !(rounds >= 1)) throw new Error('--requests (at least 500) and --rounds (at least 1) take numbers')
let encodedBytes = 0
/** An exporter that encodes each batch with `serializer` (if any), then drops it (no network: its cost is a few writes per 512 spans). */
const encodingExporter = (serializer: { serializeRequest(spans: ReadableSpan[]): Uint8Array | undefined } | null): SpanExporter => ({
  export(spans, done) {
    if (serializer !== null) encodedBytes += serializer.serializeRequest(spans)?.length ?? 0
    done({ code: ExportResultCode.SUCCESS })
  },
  shutdown: async () => {},
})
/** The node's transport stand-in: takes each encoded body and drops it. */
const droppingDelegate: IOtlpExportDelegate<EncodedBatch> = {
  export(batch, done) {
    encodedBytes += batch.body.length
    done({ code: ExportResultCode.SUCCESS })
  },
  forceFlush: async () => {},
  shutdown: async () => {},
  setMetrics: () => {},
}
const processors: Record<string, SpanProcessor> = {
  'span work alone': new BatchSpanProcessor(encodingExporter(null)),
  'the node (spans encoded as they end: span-export.ts, otlp-proto.ts)': new EncodingSpanProcessor(droppingDelegate, { maxBatch: 512, delayMs: 5000, maxQueue: 2048 }),
  'official protobuf serializer (SDK batch processor)': new BatchSpanProcessor(encodingExporter(ProtobufTraceSerializer)),
  'official JSON serializer (SDK batch processor)': new BatchSpanProcessor(encodingExporter(JsonTraceSerializer)),
}
const tracings = Object.fromEntries(Object.entries(processors).map(([name, processor]) => [name, createTracing({ processors: [processor], nodeId: 'bench', region: 'default', content: false })]))
let tracing = Object.values(tracings)[0]!

/** An attempt as routing plans it: only the fields the trace reads (a DispatchStep has more). */
function step(index: number, provider: string, keyName: string): DispatchStep {
  return {
    kind: 'attempt', target: { provider: { name: provider, adapter: { type: provider } }, model: 'gpt-4o-mini' }, index,
    key: { id: keyName, name: keyName }, delayMs: 0, headersMs: 30_000, firstTokenMs: null, idleMs: 30_000,
    leftOut: 0, skipped: [], continuable: false, check: false, trials: [],
  } as unknown as DispatchStep
}
const served = step(0, 'openai', 'prod-1')
const noEffects = { failure: null, holds: null, backoff: null, trials: [] }
const usage = { promptTokens: 12, completionTokens: 30 }
const extra = { provider: 'openai', model: 'gpt-4o-mini', key_id: 'prod-1', key_name: 'prod-1', attempts: [{}], request_id: 'r' } as never
const headers = { 'content-type': 'application/json', host: '127.0.0.1' }

/** One served request with one attempt, as pipeline.ts and engine.ts trace it. */
function oneRequest(): void {
  const request = tracing.request(headers, 'POST', '/v1/chat/completions', 'chat_completions')
  request.asked('0193a1b2-0000-7000-8000-000000000000', 'openai/gpt-4o-mini', [], false, () => '')
  const attempt = request.attempt(served, 'openai')
  if (attempt.traceparent.length === 0) throw new Error('no traceparent')
  attempt.reported(noEffects, 200, usage)
  request.answered(extra, usage, null)
  request.end()
}

/** `requests` requests through `tracing`, exported every 500 (1,000 spans) and waited for: the batch queue (2,048 spans) never overflows, so no span is dropped uncounted. */
async function runRequests(): Promise<void> {
  for (let index = 0; index < requests; index++) {
    oneRequest()
    if (index % 500 === 499) await tracing.flush()
  }
  await tracing.flush()
}

const perRequest = new Map<string, number[]>(Object.keys(processors).map((name) => [name, []]))
const bytes = new Map<string, number>()
for (let round = 0; round < rounds; round++) {
  for (const [name, chosen] of Object.entries(tracings)) {
    tracing = chosen
    encodedBytes = 0
    const before = process.cpuUsage()
    await runRequests()
    const cpu = process.cpuUsage(before)
    perRequest.get(name)!.push((cpu.user + cpu.system) / requests)
    bytes.set(name, encodedBytes / requests)
  }
}
/** Bytes allocated per request by each encoder's path: every allocation sampled about once per 64 bytes, collected ones included. */
const allocated = new Map<string, number>()
const inspector = new Session()
inspector.connect()
await inspector.post('HeapProfiler.enable')
for (const [name, chosen] of Object.entries(tracings)) {
  tracing = chosen
  await inspector.post('HeapProfiler.startSampling', { samplingInterval: 64, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  await runRequests()
  const { profile } = await inspector.post('HeapProfiler.stopSampling')
  let total = 0
  const visit = (node: typeof profile.head): void => {
    total += node.selfSize
    node.children.forEach(visit)
  }
  visit(profile.head)
  allocated.set(name, total / requests)
}
inspector.disconnect()
for (const each of Object.values(tracings)) await each.shutdown()
console.log(`${rounds} rounds of ${requests} requests each (the first is warm-up and left out when there are more)`)
console.log('| encoder | µs CPU per request, median | best round | bytes per request | bytes allocated per request |')
console.log('| --- | ---: | ---: | ---: | ---: |')
for (const [name, all] of perRequest) {
  const kept = (all.length > 1 ? all.slice(1) : all).sort((a, b) => a - b)
  console.log(`| ${name} | ${kept[Math.floor(kept.length / 2)]!.toFixed(1)} | ${kept[0]!.toFixed(1)} | ${Math.round(bytes.get(name)!)} | ${Math.round(allocated.get(name)!).toLocaleString('en-US')} |`)
}
