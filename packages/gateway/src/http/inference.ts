/**
 * POST /v1/chat/completions on Node's own request and response: read and check the body,
 * serve it through the engine, render JSON or SSE, and answer errors OpenAI-style with
 * extra_fields. No Hono on this route (see `createListener` in app.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Cancellation } from '@switchboard/providers'
import { RoutingLog } from '@switchboard/routing'
import type { Logger } from 'pino'
import { GatewayError, asGatewayError } from '../errors.ts'
import { serveChat, type EngineComponents } from '../inference/engine.ts'
import { renderJson, renderStream } from '../inference/render.ts'
import { validateChatRequest } from '../inference/validate.ts'
import type { Metrics } from '../observability/metrics.ts'
import { newRequestId } from '@switchboard/history'
import type { RequestRecorder, RequestTrack } from '../recording/request-record.ts'
import { readBody } from './body.ts'

/** What the inference route needs of the node. */
export interface InferenceComponents extends EngineComponents {
  logger: Logger
  metrics: Metrics
  /** The per-request record's listeners (the request log); tracks nothing while nobody listens. */
  recorder: RequestRecorder
}

export interface InferenceInit {
  maxRequestBodyBytes: number
  /** `client.allow_direct_keys`: honour `x-bf-direct-key`. */
  allowDirectKeys: boolean
}

/** Session headers that coding agents already send, after our own (reference: "How adaptive routing works"). */
const SESSION_HEADERS = ['x-bf-session-id', 'x-claude-code-session-id', 'x-session-id', 'session_id', 'conversation_id'] as const

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
    outgoing.setHeader('x-request-id', requestId)
    const track = recorder.active ? recorder.track(outgoing, 'chat_completions', startedAt, requestId) : null
    try {
      await serveInference(components, init, incoming, outgoing, requestId, track)
    } catch (error) {
      writeError(components, outgoing, error, requestId, track)
    }
  }
}

async function serveInference(components: InferenceComponents, init: InferenceInit, incoming: IncomingMessage, outgoing: ServerResponse, requestId: string, track: RequestTrack | null): Promise<void> {
  const headers = incoming.headers
  const contentType = headers['content-type']
  if (contentType !== undefined && !contentType.toLowerCase().includes('json')) {
    throw new GatewayError('unsupported_media_type', `Send the body as JSON with "content-type: application/json" (got "${contentType}").`)
  }
  const text = await readBody(incoming, init.maxRequestBodyBytes)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new GatewayError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`)
  }
  const request = validateChatRequest(json)
  // The caller going away (the socket closes before we answered) cancels the upstream call.
  const caller = new Cancellation()
  outgoing.once('close', () => {
    if (!outgoing.writableFinished) caller.abort()
  })
  let sessionId: string | null = null
  for (const name of SESSION_HEADERS) {
    const value = headers[name]
    if (typeof value === 'string' && value !== '') {
      sessionId = value
      break
    }
  }
  const directKey = headers['x-bf-direct-key']
  if (directKey !== undefined && !init.allowDirectKeys) {
    throw new GatewayError('direct_keys_disabled', 'This gateway does not accept provider keys from callers (x-bf-direct-key). Drop the header to use the configured keys, or set "client": {"allow_direct_keys": true} in config.json to allow them.')
  }
  const hasDirectKey = typeof directKey === 'string' && directKey !== ''
  const wantsLog = headers['x-bf-routing-log'] === 'true' || components.logger.isLevelEnabled('debug')
  const log = new RoutingLog(wantsLog, track !== null)
  if (track !== null) {
    track.asked = { model: request.model, fallbacks: request.fallbacks, stream: request.stream, sessionId, directKey: hasDirectKey, body: track.content ? text : undefined }
    track.log = log
  }
  let served
  try {
    served = await serveChat(components, request, caller, { requestId, sessionId, directKey: hasDirectKey ? (directKey as string) : null, log })
  } catch (error) {
    if (error instanceof GatewayError) components.metrics.requests.inc({ provider: 'none', status: String(error.status) })
    if (wantsLog && log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
    throw error
  }
  components.metrics.requests.inc({ provider: served.extraFields.provider, status: '200' })
  if (wantsLog && log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
  if (track !== null) {
    track.succeeded(served)
    if (served.success.kind === 'stream') served.observer = track
  }
  if (served.success.kind === 'stream') await renderStream(outgoing, served)
  else renderJson(outgoing, served)
}

const NO_ATTEMPTS = Object.freeze([])

/** Where an inference error becomes an answer (the Hono app's onError answers for its routes). */
function writeError(components: InferenceComponents, outgoing: ServerResponse, error: unknown, requestId: string, track: RequestTrack | null): void {
  const gatewayError = asGatewayError(error, components.logger)
  // Every inference answer carries extra_fields (design.md), also an error raised before any attempt.
  gatewayError.extraFields ??= { provider: null, model: null, key_id: null, key_name: null, attempts: NO_ATTEMPTS, request_id: requestId }
  track?.failed(gatewayError)
  if (outgoing.headersSent) {
    // Too late for a status: end what was started.
    if (!outgoing.writableEnded) outgoing.destroy()
    return
  }
  const body = JSON.stringify(gatewayError.toJSON())
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
  if (gatewayError.retryAfterSeconds !== null) headers['retry-after'] = gatewayError.retryAfterSeconds
  outgoing.writeHead(gatewayError.status, headers)
  outgoing.end(body)
}

