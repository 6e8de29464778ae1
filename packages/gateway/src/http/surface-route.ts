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
import { serveChat, type Served } from '../inference/engine.ts'
import { renderJson, renderStream, type StreamFraming } from '../inference/render.ts'
import type { InferenceComponents, InferenceInit } from './inference.ts'
import { callerCancellation, readFallbacks, readJsonObject, readModel, readStream, requestContext, requestIdOf, routingHeaders, upstreamFields } from './surface.ts'

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

const NO_ATTEMPTS = Object.freeze({ provider: null, model: null, key_id: null, key_name: null, attempts: Object.freeze([]) })

/** A handler for one surface's POST route; never rejects. */
export function createSurfaceHandler(components: InferenceComponents, init: InferenceInit, spec: SurfaceSpec): (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<void> {
  return async (incoming, outgoing) => {
    const requestId = requestIdOf(incoming.headers)
    try {
      await serve(components, init, spec, incoming, outgoing, requestId)
    } catch (error) {
      writeSurfaceError(components, spec, outgoing, error, requestId)
    }
  }
}

async function serve(components: InferenceComponents, init: InferenceInit, spec: SurfaceSpec, incoming: IncomingMessage, outgoing: ServerResponse, requestId: string): Promise<void> {
  const headers = incoming.headers
  const input = await readJsonObject(incoming, init.maxRequestBodyBytes)
  const model = readModel(input)
  const stream = spec.streams && readStream(input)
  const fallbacks = readFallbacks(input)
  spec.validate(input)
  const body = upstreamFields(input)
  const forwarded: Record<string, string> = {}
  for (const name of spec.forwardHeaders ?? []) {
    const value = headers[name]
    if (typeof value === 'string') forwarded[name] = value
  }
  const caller = callerCancellation(outgoing)
  const context = requestContext(headers, components.logger)
  let served: Served
  try {
    served = await serveChat(components, {
      body: body as ChatRequestBody,
      model,
      fallbacks,
      stream,
      // A shallow copy per attempt: an adapter sets `model` on it, translations only read.
      surface: { surface: spec.surface, stream, bodyFor: () => ({ ...body }), headers: forwarded, nativeOnly: spec.nativeOnly?.(body) === true },
    }, caller, context)
  } catch (error) {
    if (context.log.lines.length > 0) components.logger.debug({ routing: context.log.lines }, 'routing log')
    if (error instanceof GatewayError && error.code === 'surface_not_served' && spec.whenNotServed !== undefined) {
      return writeJson(outgoing, 200, spec.whenNotServed(body, model, error), routingHeaders(requestId, { model }))
    }
    if (error instanceof GatewayError) components.metrics.requests.inc({ provider: 'none', status: String(error.status) })
    throw error
  }
  components.metrics.requests.inc({ provider: served.extraFields.provider, status: '200' })
  if (context.log.lines.length > 0) components.logger.debug({ routing: context.log.lines }, 'routing log')
  const answerHeaders = routingHeaders(requestId, served.extraFields)
  if (served.success.kind === 'stream') await renderStream(outgoing, served, answerHeaders, spec.framing)
  else renderJson(outgoing, served, answerHeaders)
}

function writeJson(outgoing: ServerResponse, status: number, body: Record<string, unknown>, headers: Record<string, string>): void {
  const text = JSON.stringify(body)
  headers['content-type'] = 'application/json'
  headers['content-length'] = String(Buffer.byteLength(text))
  outgoing.writeHead(status, headers)
  outgoing.end(text)
}

function writeSurfaceError(components: InferenceComponents, spec: SurfaceSpec, outgoing: ServerResponse, error: unknown, requestId: string): void {
  const gatewayError = asGatewayError(error, components.logger)
  gatewayError.extraFields ??= NO_ATTEMPTS
  if (outgoing.headersSent) {
    if (!outgoing.writableEnded) outgoing.destroy()
    return
  }
  writeJson(outgoing, gatewayError.status, spec.errorBody(gatewayError, requestId), routingHeaders(requestId, gatewayError.extraFields))
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
