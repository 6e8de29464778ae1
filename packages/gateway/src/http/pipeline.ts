/**
 * The one inference pipeline (issue 35): every inference route is this handler with a spec that
 * says how its body is read and how its answers and errors look; authentication, the routing
 * context, the engine, the held stream, metrics, limits, the request log and the error writer
 * are shared. Runs on Node's own request and response, without Hono (app.ts, `createListener`).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import { newRequestId, type RequestSurface } from '@switchboard/history'
import { authenticateCaller, checkCallerTarget, type CallerComponents } from '../access/callers.ts'
import { isJsonMediaType } from '../access/media.ts'
import { asGatewayError, GatewayError } from '../errors.ts'
import { servedUsage, serveChat, type EngineComponents, type EngineRequest, type Served } from '../inference/engine.ts'
import { renderJson, renderStream, type StreamFraming } from '../inference/render.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { RequestTrace } from '../observability/tracing/request-trace.ts'
import type { Tracing } from '../observability/tracing/setup.ts'
import type { GatewayConfig } from '../config/load.ts'
import type { RequestRecorder, RequestTrack } from '../recording/request-record.ts'
import { readBody } from './body.ts'
import { endHeldStream, StreamHold } from './stream-hold.ts'
import { callerCancellation, pathOf, requestContext, routingHeaders, writeJson } from './surface.ts'

/** What the inference routes need of the node. */
export interface InferenceComponents extends EngineComponents {
  logger: Logger
  metrics: Metrics
  /** The per-request record's listeners (the request log); tracks nothing while nobody listens. */
  recorder: RequestRecorder
  /** Gateway keys and their limits: who may call (access/callers.ts). */
  callers: CallerComponents
  /** OpenTelemetry tracing; null or absent while off (the default), and then no span is built. */
  tracing?: Tracing | null
}

/** The config.json settings the inference routes read. */
export type InferenceInit = Pick<GatewayConfig, 'maxRequestBodyBytes' | 'allowDirectKeys'>

/** A request read off its body: what routing and the engine need, and what the request log keeps. */
export interface ReadRequest {
  /** The engine's request: model, fallbacks, the body (and the surface call of a non-chat surface). */
  request: EngineRequest
  stream: boolean
  /** The body as the request log keeps it (content recording on). */
  recordedBody(): string
}

/** What an inference route adds to the pipeline. */
export interface InferenceSpec {
  /** The request log's name of the route. */
  recordAs: RequestSurface
  /** Reads and checks the body (its JSON text); throws a GatewayError naming the field. */
  read(text: string, headers: IncomingHttpHeaders): ReadRequest
  framing: StreamFraming
  errorBody(error: GatewayError, requestId: string): Record<string, unknown>
  /** An answer of its own when no provider of the model serves the surface (count_tokens estimates); may throw a better error. */
  whenNotServed?(body: Record<string, unknown>, model: string, error: GatewayError): Record<string, unknown>
}

const NO_ATTEMPTS = Object.freeze([])

/** A handler for one inference route; never rejects. */
export function createInferenceRoute(components: InferenceComponents, init: InferenceInit, spec: InferenceSpec): (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<void> {
  const { recorder } = components
  const tracing = components.tracing ?? null
  return async (incoming, outgoing) => {
    const startedAt = components.now()
    const requestId = newRequestId(startedAt)
    // x-request-id goes out with the routing headers in writeHead: a header set before it would
    // send Node down its slow path.
    const track = recorder.active ? recorder.track(outgoing, spec.recordAs, startedAt, requestId) : null
    const held: { hold: StreamHold | null } = { hold: null }
    const traced = tracing === null ? null : tracing.request(incoming.headers, incoming.method ?? 'POST', pathOf(incoming.url), spec.recordAs)
    try {
      await serve(components, init, spec, incoming, outgoing, requestId, track, held, traced)
    } catch (error) {
      held.hold?.release()
      writeError(components, spec, outgoing, error, requestId, track, held.hold?.committed === true, traced)
    }
    traced?.end()
  }
}

async function serve(components: InferenceComponents, init: InferenceInit, spec: InferenceSpec, incoming: IncomingMessage, outgoing: ServerResponse, requestId: string, track: RequestTrack | null, held: { hold: StreamHold | null }, traced: RequestTrace | null): Promise<void> {
  const headers = incoming.headers
  const contentType = headers['content-type']
  if (!isJsonMediaType(contentType)) {
    throw new GatewayError('unsupported_media_type', `Send the body as JSON with "content-type: application/json" (got ${contentType === undefined ? 'none' : `"${contentType}"`}).`)
  }
  // Who is calling, before the body is read (access/callers.ts).
  const found = authenticateCaller(components.callers, incoming)
  const gatewayKey = found instanceof Promise ? await found : found
  if (track !== null) track.gatewayKey = gatewayKey?.name ?? null
  const read = spec.read(await readBody(incoming, init.maxRequestBodyBytes), headers)
  const request = read.request
  checkCallerTarget(gatewayKey, request.model, request.fallbacks)
  // The caller going away (the socket closes before we answered) cancels the upstream call.
  const caller = callerCancellation(outgoing)
  const context = requestContext(headers, components.logger, requestId, track !== null && track.recorded, init.allowDirectKeys)
  if (gatewayKey?.providers) context.allowedProviders = gatewayKey.providers
  if (traced !== null) {
    context.trace = traced
    traced.asked(requestId, request.model, request.fallbacks, read.stream, () => read.recordedBody())
  }
  const log = context.log
  if (track !== null) {
    track.asked = { model: request.model, fallbacks: request.fallbacks, stream: read.stream, sessionId: context.sessionId, directKey: context.directKey !== null, body: track.content ? read.recordedBody() : undefined }
    track.log = log
  }
  // A stream's caller gets its 200 only with the first content, or keep-alives once it waited long.
  if (read.stream) held.hold = new StreamHold(outgoing, requestId)
  let served: Served
  try {
    served = await serveChat(components, request, caller, context)
  } catch (error) {
    if (log.enabled && log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
    if (error instanceof GatewayError && error.code === 'surface_not_served' && spec.whenNotServed !== undefined) {
      held.hold?.release()
      const answer = spec.whenNotServed(request.body as unknown as Record<string, unknown>, request.model, error)
      const extra = answer.extra_fields as Record<string, unknown> | undefined
      if (extra !== undefined) extra.request_id = requestId
      if (track !== null) track.usage = { promptTokens: Number(answer.input_tokens) || 0, completionTokens: 0 }
      return writeJson(outgoing, 200, answer, routingHeaders(requestId, { model: request.model }))
    }
    if (error instanceof GatewayError) {
      components.metrics.requests.inc({ provider: 'none', status: String(error.status) })
      if (gatewayKey !== null) components.metrics.gatewayKeyRequests.inc({ gateway_key: gatewayKey.name, status: String(error.status) })
    }
    throw error
  }
  components.metrics.requests.inc({ provider: served.extraFields.provider, status: '200' })
  if (gatewayKey !== null) components.metrics.gatewayKeyRequests.inc({ gateway_key: gatewayKey.name, status: '200' })
  if (log.enabled && log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
  if (track !== null) {
    track.served = served
    if (served.success.kind === 'stream') served.observer = track
  }
  held.hold?.release()
  const answerHeaders = routingHeaders(requestId, served.extraFields)
  const ended = served.success.kind === 'stream' ? await renderStream(outgoing, served, answerHeaders, spec.framing) : (renderJson(outgoing, served, answerHeaders), served)
  if (traced !== null) traced.answered(ended.extraFields, servedUsage(ended), jsonText(ended))
  // The gateway key's tokens per minute count what was billed: a stream's once it ended.
  if (gatewayKey !== null && gatewayKey.tokensPerMinute !== null) {
    const usage = servedUsage(ended)
    if (usage !== null) components.callers.limiter.recordTokens(gatewayKey, usage.promptTokens + usage.completionTokens)
  }
}

/** A JSON answer's text, read only when a trace records content. */
function jsonText(served: Served): (() => string) | null {
  const success = served.success
  if (success.kind !== 'json') return null
  return () => (success.bytes !== undefined ? success.bytes.toString('utf8') : JSON.stringify(success.body))
}

/** Where every inference error becomes an answer (the Hono app's onError answers for its own routes). */
function writeError(components: InferenceComponents, spec: InferenceSpec, outgoing: ServerResponse, error: unknown, requestId: string, track: RequestTrack | null, committed: boolean, traced: RequestTrace | null): void {
  const gatewayError = asGatewayError(error, components.logger)
  // Every inference answer carries extra_fields (design.md), also an error raised before any attempt.
  gatewayError.extraFields ??= { provider: null, model: null, key_id: null, key_name: null, attempts: NO_ATTEMPTS, request_id: requestId }
  if (track !== null) track.error = gatewayError
  traced?.failed(gatewayError)
  // The caller's stream was opened while the gate waited: the error goes in-band, where SDKs raise it.
  if (committed) return endHeldStream(outgoing, spec.framing, gatewayError)
  if (outgoing.headersSent) {
    // Too late for a status: end what was started.
    if (!outgoing.writableEnded) outgoing.destroy()
    return
  }
  const headers = routingHeaders(requestId, gatewayError.extraFields)
  if (gatewayError.retryAfterSeconds !== null) headers['retry-after'] = String(gatewayError.retryAfterSeconds)
  writeJson(outgoing, gatewayError.status, spec.errorBody(gatewayError, requestId), headers)
}
