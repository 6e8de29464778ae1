/**
 * OpenTelemetry tracing of inference requests (issue 40), off unless the standard OTLP
 * variables name an endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (OTLP over HTTP, protobuf unless `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`). The exporter, the batch processor
 * and the sampler read the rest of the `OTEL_*` variables themselves (headers, timeout,
 * `OTEL_BSP_*`, `OTEL_TRACES_SAMPLER`, span limits; `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`). Off, the node has no tracer at all: the request path tests one
 * `null` and builds nothing.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { ROOT_CONTEXT } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base'
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http'
import { JsonTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, type ReadableSpan, type Sampler, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base'
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'
import type { RequestSurface } from '@switchboard/history'
import { batchOptionsFromEnv, EncodingSpanProcessor, ExportHealth, encodedMetrics, encodedSerializer } from './span-export.ts'
import { RequestTrace } from './request-trace.ts'
import { tracingWanted } from './wanted.ts'
import { samplerFromEnv, SharedSets, type SpanMaker } from './spans.ts'

export { tracingWanted }

/** The tracing of one node (one process: each worker exports its own spans). */
export type Tracing = ReturnType<typeof createTracing>

export interface TracingInit {
  /** Span processors (tests pass one with an in-memory exporter). */
  processors: SpanProcessor[]
  nodeId: string
  region: string
  content: boolean
  /** Resource attributes besides the service's (the environment's, for a real node). */
  resource?: Record<string, string>
  /** The sampler (`OTEL_TRACES_SAMPLER`'s, for a real node); parentbased_always_on when absent. */
  sampler?: Sampler
  /** `OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`; no limit when absent. */
  valueLengthLimit?: number
  /** How the exports fare (a real node's processors report to it). */
  health?: ExportHealth
}

const propagator = new W3CTraceContextPropagator()
const headerGetter = {
  keys: (carrier: IncomingHttpHeaders) => Object.keys(carrier),
  get: (carrier: IncomingHttpHeaders, key: string) => carrier[key],
}

/** The node's tracing as the environment asks for it, or null (off: the default). */
export function tracingFromEnv(env: NodeJS.ProcessEnv, node: { nodeId: string; region: string; log: (level: 'warn' | 'info', message: string) => void }): Tracing | null {
  if (!tracingWanted(env)) return null
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim() || 'http/protobuf'
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    // OTLP over HTTP only; collectors take both encodings on :4318.
    process.emitWarning(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: Switchboard exports traces over HTTP, as http/protobuf`)
  }
  const content = env.SWITCHBOARD_OTEL_CONTENT === '1' || env.SWITCHBOARD_OTEL_CONTENT?.toLowerCase() === 'true'
  const limit = Number((env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT ?? env.OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT)?.trim() || Number.NaN)
  const health = new ExportHealth(node.log)
  return createTracing({
    processors: [protocol === 'http/json' ? jsonProcessor(health) : protobufProcessor(env, health)],
    health,
    nodeId: node.nodeId,
    region: node.region,
    content,
    resource: environmentResource(),
    sampler: samplerFromEnv(env),
    valueLengthLimit: Number.isInteger(limit) && limit >= 0 ? limit : Infinity,
  })
}

/**
 * Protobuf, the OTLP default: spans encoded as they end by our encoder (otlp-proto.ts: the
 * official serializer's bytes for a fraction of its CPU) and sent by the official exporter's
 * transport and configuration (endpoint, headers, timeout, compression, retries: the
 * `OTEL_EXPORTER_OTLP_*` variables).
 */
function protobufProcessor(env: NodeJS.ProcessEnv, health: ExportHealth): SpanProcessor {
  const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' })
  return new EncodingSpanProcessor(createOtlpHttpExportDelegate(options, encodedSerializer, 'otlp_http_span_exporter', encodedMetrics, undefined), batchOptionsFromEnv(env), health)
}

/** JSON, when asked for: the SDK's batch processor and the official exporter and serializer. */
function jsonProcessor(health: ExportHealth): SpanProcessor {
  const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/json' })
  const exporter: SpanExporter = new OTLPExporterBase<ReadableSpan[]>(createOtlpHttpExportDelegate(options, JsonTraceSerializer, 'otlp_http_span_exporter', TraceExporterMetricsHelper, undefined))
  return new BatchSpanProcessor({
    export: (spans, done) => exporter.export(spans, (result) => {
      health.settled(result, spans.length)
      done(result)
    }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  })
}

/** OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read synchronously (the env detector's attributes are plain values). */
function environmentResource(): Record<string, string> {
  const detected = detectResources({ detectors: [envDetector] }).attributes
  const plain: Record<string, string> = {}
  for (const [name, value] of Object.entries(detected)) if (typeof value === 'string') plain[name] = value
  return plain
}

/** Tracing with the given span processors. */
export function createTracing(init: TracingInit) {
  const resource = defaultResource().merge(resourceFromAttributes({
    [ATTR_SERVICE_NAME]: 'switchboard',
    [ATTR_SERVICE_VERSION]: '0.1.0',
    'service.instance.id': init.nodeId,
    'switchboard.node_id': init.nodeId,
    'switchboard.region': init.region,
    ...init.resource,
  }))
  const maker: SpanMaker = {
    resource,
    scope: { name: '@switchboard/gateway', version: '0.1.0' },
    sampler: init.sampler ?? samplerFromEnv({}),
    processors: init.processors,
    valueLengthLimit: init.valueLengthLimit ?? Infinity,
    shared: new SharedSets(),
  }
  return {
    /** Prompt and completion content go into spans (`SWITCHBOARD_OTEL_CONTENT=1`); off by default. */
    content: init.content,
    /** Starts the SERVER span of an inference request, a child of the caller's `traceparent` when it sent a valid one. */
    request(headers: IncomingHttpHeaders, method: string, path: string, surface: RequestSurface): RequestTrace {
      const parent = headers.traceparent === undefined ? null : propagator.extract(ROOT_CONTEXT, headers, headerGetter)
      return new RequestTrace(maker, parent, method, path, surface, init.content)
    },
    /** Spans dropped because the export queue was full (the collector slower than the node). */
    dropped: () => init.processors.reduce((sum, processor) => sum + (processor instanceof EncodingSpanProcessor ? processor.dropped : 0), 0),
    /** Spans lost because their export failed (the collector unreachable, refusing, or too slow to answer). */
    failed: () => init.health?.failedSpans ?? 0,
    /** Exports what is buffered now (benches, tests). */
    async flush(): Promise<void> {
      await Promise.all(init.processors.map((processor) => processor.forceFlush()))
    },
    /** Exports what is buffered and stops (the node's shutdown). */
    async shutdown(): Promise<void> {
      await Promise.all(init.processors.map((processor) => processor.shutdown()))
    },
  }
}
