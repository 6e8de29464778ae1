/**
 * One handler shape for every inference surface besides chat completions: parse the body in
 * the surface's format, serve it through the same engine as chat (routing, holds, retries,
 * fallbacks, sessions), render JSON or the surface's event stream, and answer errors in the
 * surface's own shape. A surface file (messages.ts, responses.ts, embeddings.ts) only says
 * how its body is checked and how its errors look.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Surface } from '@switchboard/providers'
import type { ChatRequestBody } from '@switchboard/providers'
import { GatewayError, asGatewayError } from '../errors.ts'
import { authenticateCaller, checkCallerTarget } from '../access/callers.ts'
import { servedUsage, serveChat, type Served } from '../inference/engine.ts'
import { renderJson, renderStream, type StreamFraming } from '../inference/render.ts'
import type { InferenceComponents, InferenceInit } from './inference.ts'
import { newRequestId } from '@switchboard/history'
import type { RequestTrack } from '../recording/request-record.ts'
import { endHeldStream, holdStream, type StreamHold } from './stream-hold.ts'
import { callerCancellation, readFallbacks, readJsonObject, readModel, readStream, requestContext, routingHeaders, upstreamFields } from './surface.ts'

/** What a surface adds to the shared handler. */
export interface SurfaceSpec {
  surface: Surface
  /** Checks the body beyond model/stream/fallbacks; throws GatewayError('invalid_request') naming the field. */
  validate(input: Record<string, unknown>): void
  /** Event framing of its streams. */
  framing: StreamFraming
  /** Its error body for a GatewayError. */
  errorBody(error: GatewayError, requestId: string): Record<string, unknown>
  /** Whether the request may be streamed at all (embeddings and token counts are not). */
  streams: boolean
  /** Caller headers a native upstream gets unchanged. */
  forwardHeaders?: readonly string[]
  /** An answer of its own when no provider of the model serves the surface (count_tokens estimates); may throw a better error. */
  whenNotServed?(input: Record<string, unknown>, model: string, error: GatewayError): Record<string, unknown>
  /** True when this request may only go to upstreams that speak the surface natively (stored conversations). */
  nativeOnly?(input: Record<string, unknown>): boolean
}

const NO_ATTEMPTS = Object.freeze([])

/** A handler for one surface's POST route; never rejects. */
export function createSurfaceHandler(components: InferenceComponents, init: InferenceInit, spec: SurfaceSpec): (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<void> {
  const { recorder } = components
  return async (incoming, outgoing) => {
    const startedAt = components.now()
    const requestId = newRequestId(startedAt)
    outgoing.setHeader('x-request-id', requestId)
    const track = recorder.active ? recorder.track(outgoing, spec.surface === 'count_tokens' ? 'messages_count_tokens' : spec.surface, startedAt, requestId) : null
    const held: { hold: StreamHold | null } = { hold: null }
    try {
      await serve(components, init, spec, incoming, outgoing, requestId, track, held)
    } catch (error) {
      held.hold?.release()
      writeSurfaceError(components, spec, outgoing, error, requestId, track, held.hold?.committed === true)
    }
  }
}

async function serve(components: InferenceComponents, init: InferenceInit, spec: SurfaceSpec, incoming: IncomingMessage, outgoing: ServerResponse, requestId: string, track: RequestTrack | null, held: { hold: StreamHold | null }): Promise<void> {
  const headers = incoming.headers
  // Who is calling, before the body is read: the same check as chat completions (access/callers.ts).
  const found = authenticateCaller(components.callers, incoming)
  const identity = found instanceof Promise ? await found : found
  if (track !== null) track.gatewayKey = identity.keyName
  const input = await readJsonObject(incoming, init.maxRequestBodyBytes)
  const model = readModel(input)
  const stream = spec.streams && readStream(input)
  const fallbacks = readFallbacks(input)
  spec.validate(input)
  checkCallerTarget(identity, model, fallbacks)
  const body = upstreamFields(input)
  const forwarded: Record<string, string> = {}
  for (const name of spec.forwardHeaders ?? []) {
    const value = headers[name]
    if (typeof value === 'string') forwarded[name] = value
  }
  const caller = callerCancellation(outgoing)
  const context = requestContext(headers, components.logger, requestId, track !== null && track.recorded, init.allowDirectKeys)
  if (identity.key?.providers) context.allowedProviders = identity.key.providers
  if (track !== null) {
    track.asked = { model, fallbacks, stream, sessionId: context.sessionId, directKey: context.directKey !== null, body: track.content ? JSON.stringify(input) : undefined }
    track.log = context.log
  }
  // A stream's caller gets its 200 only with the first content, or keep-alives once it waited long.
  if (stream) held.hold = holdStream(outgoing, requestId)
  let served: Served
  try {
    served = await serveChat(components, {
      body: body as ChatRequestBody,
      model,
      fallbacks,
      // A shallow copy per attempt: an adapter sets `model` on it, translations only read.
      surface: { surface: spec.surface, stream, bodyFor: () => ({ ...body }), headers: forwarded, nativeOnly: spec.nativeOnly?.(body) === true },
    }, caller, context)
  } catch (error) {
    if (context.log.enabled && context.log.lines.length > 0) components.logger.debug({ routing: context.log.lines }, 'routing log')
    if (error instanceof GatewayError && error.code === 'surface_not_served' && spec.whenNotServed !== undefined) {
      const answer = spec.whenNotServed(body, model, error)
      const extra = answer.extra_fields as Record<string, unknown> | undefined
      if (extra !== undefined) extra.request_id = requestId
      if (track !== null) track.usage = { prompt_tokens: Number(answer.input_tokens) || 0, completion_tokens: 0, total_tokens: Number(answer.input_tokens) || 0 }
      return writeJson(outgoing, 200, answer, routingHeaders(requestId, { model }))
    }
    if (error instanceof GatewayError) {
      components.metrics.requests.inc({ provider: 'none', status: String(error.status) })
      if (identity.keyName !== null) components.metrics.gatewayKeyRequests.inc({ gateway_key: identity.keyName, status: String(error.status) })
    }
    throw error
  }
  components.metrics.requests.inc({ provider: served.extraFields.provider, status: '200' })
  if (identity.key !== null) components.metrics.gatewayKeyRequests.inc({ gateway_key: identity.key.name, status: '200' })
  if (context.log.enabled && context.log.lines.length > 0) components.logger.debug({ routing: context.log.lines }, 'routing log')
  if (track !== null) {
    track.succeeded(served)
    if (served.success.kind === 'stream') served.observer = track
  }
  held.hold?.release()
  const answerHeaders = routingHeaders(requestId, served.extraFields)
  const ended = served.success.kind === 'stream' ? await renderStream(outgoing, served, answerHeaders, spec.framing) : (renderJson(outgoing, served, answerHeaders), served)
  // The gateway key's tokens per minute count what was billed (the adapters read every surface's usage).
  if (identity.key !== null && identity.key.tokensPerMinute !== null) {
    const usage = servedUsage(ended)
    if (usage !== null) components.callers.limiter.recordTokens(identity.key, usage.promptTokens + usage.completionTokens)
  }
}

function writeJson(outgoing: ServerResponse, status: number, body: Record<string, unknown>, headers: Record<string, string>): void {
  const text = JSON.stringify(body)
  headers['content-type'] = 'application/json'
  headers['content-length'] = String(Buffer.byteLength(text))
  outgoing.writeHead(status, headers)
  outgoing.end(text)
}

function writeSurfaceError(components: InferenceComponents, spec: SurfaceSpec, outgoing: ServerResponse, error: unknown, requestId: string, track: RequestTrack | null, committed: boolean): void {
  const gatewayError = asGatewayError(error, components.logger)
  gatewayError.extraFields ??= { provider: null, model: null, key_id: null, key_name: null, attempts: NO_ATTEMPTS, request_id: requestId }
  track?.failed(gatewayError)
  // The caller's stream was opened while the gate waited: the error goes in-band, where SDKs raise it.
  if (committed) return endHeldStream(outgoing, spec.framing, gatewayError)
  if (outgoing.headersSent) {
    if (!outgoing.writableEnded) outgoing.destroy()
    return
  }
  const headers = routingHeaders(requestId, gatewayError.extraFields)
  if (gatewayError.retryAfterSeconds !== null) headers['retry-after'] = String(gatewayError.retryAfterSeconds)
  writeJson(outgoing, gatewayError.status, spec.errorBody(gatewayError, requestId), headers)
}

/** The OpenAI error body (Responses and embeddings callers read this shape). */
export function openAiErrorBody(error: GatewayError): Record<string, unknown> {
  return error.toJSON()
}

/** Anthropic's error `type` for a status (docs: "Errors"). */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 404) return 'not_found_error'
  if (status === 413) return 'request_too_large'
  if (status === 429) return 'rate_limit_error'
  if (status === 529) return 'overloaded_error'
  if (status >= 500) return 'api_error'
  return 'invalid_request_error'
}

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`, with our code and extra_fields beside. */
export function anthropicErrorBody(error: GatewayError, requestId: string): Record<string, unknown> {
  const body: Record<string, unknown> = { type: 'error', error: { type: anthropicErrorType(error.status), message: error.message, code: error.code }, request_id: requestId }
  if (error.extraFields !== undefined) body.extra_fields = error.extraFields
  return body
}
