/**
 * POST /v1/chat/completions on Node's own request and response: read and check the body,
 * serve it through the engine, render JSON or SSE, and answer errors OpenAI-style with
 * extra_fields. No Hono on this route (see `createListener` in app.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import { GatewayError, asGatewayError } from '../errors.ts'
import { servedUsage, serveChat, type EngineComponents } from '../inference/engine.ts'
import { CHAT_FRAMING, renderJson, renderStream } from '../inference/render.ts'
import { endHeldStream, holdStream, type StreamHold } from './stream-hold.ts'
import { validateChatRequest } from '../inference/validate.ts'
import type { Metrics } from '../observability/metrics.ts'
import { newRequestId } from '@switchboard/history'
import type { RequestRecorder, RequestTrack } from '../recording/request-record.ts'
import { parseJsonBody, readBody } from './body.ts'
import { isJsonMediaType } from '../access/media.ts'
import { authenticateCaller, checkCallerTarget, type CallerComponents } from '../access/callers.ts'
import { callerCancellation, requestContext, routingHeaders } from './surface.ts'

/** What the inference route needs of the node. */
export interface InferenceComponents extends EngineComponents {
  logger: Logger
  metrics: Metrics
  /** The per-request record's listeners (the request log); tracks nothing while nobody listens. */
  recorder: RequestRecorder
  /** Gateway keys and their limits: who may call (access/callers.ts). */
  callers: CallerComponents
}

export interface InferenceInit {
  maxRequestBodyBytes: number
  /** `client.allow_direct_keys`: honour `x-bf-direct-key`. */
  allowDirectKeys: boolean
}

const INFERENCE_PATH = '/v1/chat/completions'

export function isInferencePath(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(INFERENCE_PATH)) return false
  return url.length === INFERENCE_PATH.length || url.charCodeAt(INFERENCE_PATH.length) === 0x3f /* ? */
}

/** POST /v1/chat/completions on Node's own request and response; never rejects. */
export function createInferenceHandler(components: InferenceComponents, init: InferenceInit): (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<void> {
  const { recorder } = components
  return async (incoming, outgoing) => {
    const startedAt = components.now()
    const requestId = newRequestId(startedAt)
    // x-request-id goes out with the other routing headers in writeHead (renderJson, renderStream,
    // writeError): a header set before writeHead would send Node down its slow path, which
    // re-validates every header one setHeader at a time.
    const track = recorder.active ? recorder.track(outgoing, 'chat_completions', startedAt, requestId) : null
    const held: { hold: StreamHold | null } = { hold: null }
    try {
      await serveInference(components, init, incoming, outgoing, requestId, track, held)
    } catch (error) {
      held.hold?.release()
      writeError(components, outgoing, error, requestId, track, held.hold?.committed === true)
    }
  }
}

async function serveInference(components: InferenceComponents, init: InferenceInit, incoming: IncomingMessage, outgoing: ServerResponse, requestId: string, track: RequestTrack | null, held: { hold: StreamHold | null }): Promise<void> {
  const headers = incoming.headers
  const contentType = headers['content-type']
  if (!isJsonMediaType(contentType)) {
    throw new GatewayError('unsupported_media_type', `Send the body as JSON with "content-type: application/json" (got ${contentType === undefined ? 'none' : `"${contentType}"`}).`)
  }
  // Who is calling, before anything else is read (access/callers.ts; every inference surface calls it).
  const found = authenticateCaller(components.callers, incoming)
  const caller = found instanceof Promise ? await found : found
  if (track !== null) track.gatewayKey = caller.keyName
  const text = await readBody(incoming, init.maxRequestBodyBytes)
  const request = validateChatRequest(parseJsonBody(text))
  checkCallerTarget(caller, request.model, request.fallbacks)
  // The caller going away (the socket closes before we answered) cancels the upstream call.
  const cancellation = callerCancellation(outgoing)
  const context = requestContext(headers, components.logger, requestId, track !== null && track.recorded, init.allowDirectKeys)
  if (caller.key?.providers) context.allowedProviders = caller.key.providers
  const log = context.log
  const wantsLog = log.enabled
  if (track !== null) {
    track.asked = { model: request.model, fallbacks: request.fallbacks, stream: request.stream, sessionId: context.sessionId, directKey: context.directKey !== null, body: track.content ? text : undefined }
    track.log = log
  }
  // A stream's caller gets its 200 only with the first content, or keep-alives once it waited long.
  if (request.stream) held.hold = holdStream(outgoing, requestId)
  let served
  try {
    served = await serveChat(components, request, cancellation, context)
  } catch (error) {
    if (error instanceof GatewayError) {
      components.metrics.requests.inc({ provider: 'none', status: String(error.status) })
      if (caller.keyName !== null) components.metrics.gatewayKeyRequests.inc({ gateway_key: caller.keyName, status: String(error.status) })
    }
    if (wantsLog && log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
    throw error
  }
  components.metrics.requests.inc({ provider: served.extraFields.provider, status: '200' })
  if (caller.key !== null) components.metrics.gatewayKeyRequests.inc({ gateway_key: caller.key.name, status: '200' })
  if (wantsLog && log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
  if (track !== null) {
    track.succeeded(served)
    if (served.success.kind === 'stream') served.observer = track
  }
  held.hold?.release()
  const answerHeaders = routingHeaders(requestId, served.extraFields)
  const ended = served.success.kind === 'stream' ? await renderStream(outgoing, served, answerHeaders) : (renderJson(outgoing, served, answerHeaders), served)
  // The gateway key's tokens per minute count what was billed: a stream's once it ended.
  if (caller.key !== null && caller.key.tokensPerMinute !== null) {
    const usage = servedUsage(ended)
    if (usage !== null) components.callers.limiter.recordTokens(caller.key, usage.promptTokens + usage.completionTokens)
  }
}

const NO_ATTEMPTS = Object.freeze([])

/** Where an inference error becomes an answer (the Hono app's onError answers for its routes). */
function writeError(components: InferenceComponents, outgoing: ServerResponse, error: unknown, requestId: string, track: RequestTrack | null, committed: boolean): void {
  const gatewayError = asGatewayError(error, components.logger)
  // Every inference answer carries extra_fields (design.md), also an error raised before any attempt.
  gatewayError.extraFields ??= { provider: null, model: null, key_id: null, key_name: null, attempts: NO_ATTEMPTS, request_id: requestId }
  track?.failed(gatewayError)
  // The caller's stream was opened while the gate waited: the error goes in-band, where SDKs raise it.
  if (committed) return endHeldStream(outgoing, CHAT_FRAMING, gatewayError)
  if (outgoing.headersSent) {
    // Too late for a status: end what was started.
    if (!outgoing.writableEnded) outgoing.destroy()
    return
  }
  const body = JSON.stringify(gatewayError.toJSON())
  const headers = routingHeaders(requestId, gatewayError.extraFields)
  headers['content-type'] = 'application/json'
  headers['content-length'] = String(Buffer.byteLength(body))
  if (gatewayError.retryAfterSeconds !== null) headers['retry-after'] = String(gatewayError.retryAfterSeconds)
  outgoing.writeHead(gatewayError.status, headers)
  outgoing.end(body)
}

