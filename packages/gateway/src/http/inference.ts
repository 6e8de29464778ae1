/**
 * POST /v1/chat/completions on Node's own request and response: read and check the body,
 * serve it through the engine, render JSON or SSE, and answer errors OpenAI-style with
 * extra_fields. No Hono on this route (see `createListener` in app.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Cancellation } from '@switchboard/providers'
import type { Logger } from 'pino'
import { GatewayError, asGatewayError } from '../errors.ts'
import { serveChat, type EngineComponents, type ExtraFields } from '../inference/engine.ts'
import { renderJson, renderStream } from '../inference/render.ts'
import { validateChatRequest, type ChatRequest } from '../inference/validate.ts'
import type { Metrics } from '../observability/metrics.ts'
import { RoutingLog } from '../routing/log.ts'
import { readBody } from './body.ts'

/** What the inference route needs of the node. */
export interface InferenceComponents extends EngineComponents {
  logger: Logger
  metrics: Metrics
  /** History's per-request counts (issue 14): called once per request, returns at once. */
  recordRequest?: (request: ChatRequest, served: ExtraFields | null, error: GatewayError | null) => void
}

export interface InferenceInit {
  maxRequestBodyBytes: number
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
  return async (incoming, outgoing) => {
    try {
      await serveInference(components, init, incoming, outgoing)
    } catch (error) {
      writeError(components, outgoing, error)
    }
  }
}

async function serveInference(components: InferenceComponents, init: InferenceInit, incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
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
  const wantsLog = headers['x-bf-routing-log'] === 'true' || components.logger.isLevelEnabled('debug')
  const log = new RoutingLog(wantsLog)
  let served
  try {
    served = await serveChat(components, request, caller, { sessionId, directKey: typeof directKey === 'string' && directKey !== '' ? directKey : null, log })
  } catch (error) {
    if (error instanceof GatewayError) components.metrics.requests.inc({ provider: 'none', status: String(error.status) })
    components.recordRequest?.(request, null, error instanceof GatewayError ? error : null)
    if (log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
    throw error
  }
  components.metrics.requests.inc({ provider: served.extraFields.provider, status: '200' })
  components.recordRequest?.(request, served.extraFields, null)
  if (log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
  if (served.success.kind === 'stream') await renderStream(outgoing, served)
  else renderJson(outgoing, served)
}

const NO_ATTEMPTS = Object.freeze({ provider: null, model: null, key_id: null, key_name: null, attempts: Object.freeze([]) })

/** Where an inference error becomes an answer (the Hono app's onError answers for its routes). */
function writeError(components: InferenceComponents, outgoing: ServerResponse, error: unknown): void {
  const gatewayError = asGatewayError(error, components.logger)
  // Every inference answer carries extra_fields (design.md), also an error raised before any attempt.
  gatewayError.extraFields ??= NO_ATTEMPTS
  if (outgoing.headersSent) {
    // Too late for a status: end what was started.
    if (!outgoing.writableEnded) outgoing.destroy()
    return
  }
  const body = JSON.stringify(gatewayError.toJSON())
  outgoing.writeHead(gatewayError.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  outgoing.end(body)
}

