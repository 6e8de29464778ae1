/**
 * How a node's spans leave it over OTLP/HTTP protobuf: each sampled span is encoded the moment it
 * ends into the open batch (otlp-proto.ts), and a batch goes to the official exporter's transport
 * (endpoint, headers, timeout, retries from `OTEL_EXPORTER_OTLP_*`) when it holds
 * `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans or `OTEL_BSP_SCHEDULE_DELAY` has passed, one export at a
 * time, as the SDK's batch processor does. What waits for the export is bytes, not span objects:
 * a request's spans die with it instead of living on in a queue the collector sets the pace of.
 * At most `OTEL_BSP_MAX_QUEUE_SIZE` spans wait; past that a span is dropped and counted, never
 * waited for (recording never slows a request). A failed export loses its spans, as the SDK's
 * processor does; `ExportHealth` counts them and tells the node's log.
 */
import { TraceFlags } from '@opentelemetry/api'
import { ExportResultCode, type ExportResult } from '@opentelemetry/core'
import type { IOtlpExportDelegate } from '@opentelemetry/otlp-exporter-base'
import { ProtobufTraceSerializer, type IExporterMetricsHelper, type IExportTraceServiceResponse, type ISerializer } from '@opentelemetry/otlp-transformer'
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base'
import { SpanBatch } from './otlp-proto.ts'
import type { RequestSpan } from './spans.ts'

/** One request body ready to send, and how many spans it holds. */
export interface EncodedBatch {
  body: Uint8Array
  spans: number
}

/** The body is already the request: the transport sends it as it is. */
export const encodedSerializer: ISerializer<EncodedBatch, IExportTraceServiceResponse> = {
  serializeRequest: (batch) => batch.body,
  deserializeResponse: (body) => ProtobufTraceSerializer.deserializeResponse(body),
}
export const encodedMetrics: IExporterMetricsHelper<EncodedBatch> = { name: 'span', countItems: (batch) => batch.spans }

/** The batch processor's variables, with the SDK's defaults (512 spans, 5 s, 2048 queued). */
export function batchOptionsFromEnv(env: NodeJS.ProcessEnv): { maxBatch: number; delayMs: number; maxQueue: number } {
  const read = (name: string, fallback: number) => {
    const value = Number(env[name]?.trim() || Number.NaN)
    return Number.isInteger(value) && value > 0 ? value : fallback
  }
  const maxQueue = read('OTEL_BSP_MAX_QUEUE_SIZE', 2048)
  return { maxBatch: Math.min(read('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512), maxQueue), delayMs: read('OTEL_BSP_SCHEDULE_DELAY', 5000), maxQueue }
}

/**
 * How exports fare: spans the collector did not take (unreachable, refused, timed out), and a log
 * line when exports start failing (again at most once a minute while they fail) and when they
 * succeed again. The line carries the error's message only, never the request's headers.
 */
export class ExportHealth {
  failedSpans = 0
  private failingSince: number | null = null
  private lastLine = 0

  constructor(private readonly log: (level: 'warn' | 'info', message: string) => void, private readonly now: () => number = Date.now) {}

  get failing(): boolean {
    return this.failingSince !== null
  }

  settled(result: ExportResult, spans: number): void {
    if (result.code === ExportResultCode.SUCCESS) {
      if (this.failingSince !== null) this.log('info', `traces: the collector takes spans again (${this.failedSpans} lost in all so far)`)
      this.failingSince = null
      return
    }
    this.failedSpans += spans
    const now = this.now()
    if (this.failingSince === null || now - this.lastLine >= 60_000) {
      const reason = (result.error?.message ?? 'unknown error').slice(0, 200)
      this.log('warn', `traces: an export to the collector failed (${reason}); its ${spans} spans are lost (${this.failedSpans} in all so far)`)
      this.lastLine = now
    }
    this.failingSince ??= now
  }
}

export class EncodingSpanProcessor implements SpanProcessor {
  /** Spans dropped because the queue was full (the collector slower than the node). */
  dropped = 0
  private batch: SpanBatch | null = null
  private readonly ready: EncodedBatch[] = []
  /** Spans encoded and not yet exported (the open batch, the ready ones, the one in flight). */
  private queued = 0
  private sending = false
  private timer: NodeJS.Timeout | null = null
  private stopped = false
  private readonly drained: (() => void)[] = []

  constructor(private readonly delegate: IOtlpExportDelegate<EncodedBatch>, private readonly options: ReturnType<typeof batchOptionsFromEnv>, private readonly health?: ExportHealth) {}

  onStart(): void {}

  /** A span of ours (spans.ts): the node's spans are, and the encoder reads their parts. */
  onEnd(span: RequestSpan): void {
    if (this.stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return
    if (this.queued >= this.options.maxQueue) {
      this.dropped++
      return
    }
    let batch = this.batch
    if (batch === null || batch.resource !== span.resource || batch.scope !== span.instrumentationScope) {
      this.seal()
      batch = this.batch = new SpanBatch(span.resource, span.instrumentationScope)
    }
    batch.add(span)
    this.queued++
    if (batch.count >= this.options.maxBatch) {
      this.seal()
      this.pump()
    } else if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null
        this.seal()
        this.pump()
      }, this.options.delayMs)
      this.timer.unref()
    }
  }

  /** Exports every span ended so far. */
  async forceFlush(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.seal()
    if (this.sending || this.ready.length > 0) {
      await new Promise<void>((resolve) => {
        this.drained.push(resolve)
        this.pump()
      })
    }
    await this.delegate.forceFlush()
  }

  /** Exports what is left; while the collector is failing, what is buffered is counted lost instead, and nothing is waited for. */
  async shutdown(): Promise<void> {
    const health = this.health
    if (health?.failing !== true) {
      await this.forceFlush()
      this.stopped = true
      return this.delegate.shutdown()
    }
    if (this.timer !== null) clearTimeout(this.timer)
    this.seal()
    for (const batch of this.ready.splice(0)) health.failedSpans += batch.spans
    this.stopped = true
    this.delegate.shutdown().catch(() => {})
  }

  /** The open batch becomes a request body, ready to send. */
  private seal(): void {
    const batch = this.batch
    if (batch === null || batch.count === 0) return
    const spans = batch.count
    this.ready.push({ body: batch.take(), spans })
  }

  /** Sends the next ready body unless one is in flight. */
  private pump(): void {
    if (this.sending) return
    const next = this.ready.shift()
    if (next === undefined) {
      for (const resolve of this.drained.splice(0)) resolve()
      return
    }
    this.sending = true
    this.delegate.export(next, (result) => {
      this.health?.settled(result, next.spans)
      this.sending = false
      this.queued -= next.spans
      this.pump()
    })
  }
}
