/** The Hono app: routes, body limits, and the one place errors become HTTP answers. */
import { Hono } from 'hono'
import { getRequestListener, type HttpBindings } from '@hono/node-server'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Cancellation } from '@switchboard/providers'
import type { Logger } from 'pino'
import { GatewayError } from '../errors.ts'
import { serveChat, type EngineComponents } from '../inference/engine.ts'
import { renderJson, renderStream } from '../inference/render.ts'
import { validateChatRequest } from '../inference/validate.ts'
import { readBody } from './body.ts'
import { adminAuth, type AdminToken } from '../admin/auth.ts'
import { providersApi } from '../admin/providers-api.ts'
import type { ProviderDirectory } from '../directory/directory.ts'
import type { DatabaseHealth } from '../directory/health.ts'
import { adaptiveApi, type AdaptiveApiComponents } from '../admin/adaptive-api.ts'
import type { Metrics } from '../observability/metrics.ts'
import { RoutingLog } from '../routing/log.ts'
import type { ClusterView } from '../fleet/fleet.ts'

export interface AppComponents extends EngineComponents {
  logger: Logger
  directory: ProviderDirectory
  health: DatabaseHealth
  adaptive: AdaptiveApiComponents
  metrics: Metrics
  clusterView: () => Promise<ClusterView>
}

export interface AppInit {
  maxRequestBodyBytes: number
  adminTokens: readonly AdminToken[]
  env: NodeJS.ProcessEnv
}

/** Session headers that coding agents already send, after our own (reference: "How adaptive routing works"). */
const SESSION_HEADERS = ['x-bf-session-id', 'x-claude-code-session-id', 'x-session-id', 'session_id', 'conversation_id'] as const

/**
 * The request listener of one gateway node: POST /v1/chat/completions goes straight to the
 * inference handler; everything else (admin API, health, metrics, errors) to the Hono app.
 * The hot route skips Hono's web Request, Context and Response for each request: on Node 20
 * that machinery measured as a good share of the gateway's own CPU per request.
 */
export function createListener(components: AppComponents, init: AppInit): (incoming: IncomingMessage, outgoing: ServerResponse) => void {
  const hono = getRequestListener(createApp(components, init).fetch)
  const inference = createInferenceHandler(components, init)
  return (incoming, outgoing) => {
    if (incoming.method === 'POST' && isInferencePath(incoming.url)) void inference(incoming, outgoing)
    else void hono(incoming, outgoing)
  }
}

const INFERENCE_PATH = '/v1/chat/completions'

function isInferencePath(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(INFERENCE_PATH)) return false
  return url.length === INFERENCE_PATH.length || url.charCodeAt(INFERENCE_PATH.length) === 0x3f /* ? */
}

/** POST /v1/chat/completions on Node's own request and response; never rejects. */
function createInferenceHandler(components: AppComponents, init: AppInit): (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<void> {
  return async (incoming, outgoing) => {
    try {
      await serveInference(components, init, incoming, outgoing)
    } catch (error) {
      writeError(components, outgoing, error)
    }
  }
}

async function serveInference(components: AppComponents, init: AppInit, incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
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
    if (log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
    throw error
  }
  components.metrics.requests.inc({ provider: served.extraFields.provider, status: '200' })
  if (log.lines.length > 0) components.logger.debug({ routing: log.lines }, 'routing log')
  if (served.success.kind === 'stream') await renderStream(outgoing, served)
  else renderJson(outgoing, served)
}

const NO_ATTEMPTS = Object.freeze({ provider: null, model: null, key_id: null, key_name: null, attempts: Object.freeze([]) })

/** The one place an inference error becomes an answer (the Hono app's onError does the same for its routes). */
function writeError(components: AppComponents, outgoing: ServerResponse, error: unknown): void {
  let gatewayError: GatewayError
  if (error instanceof GatewayError) gatewayError = error
  else {
    components.logger.error({ err: error }, 'unhandled error')
    gatewayError = new GatewayError('internal_error', 'The gateway failed to handle this request; see the node log.')
  }
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

/** Builds the Hono app of one gateway node: every route but the inference one (see `createListener`). */
export function createApp(components: AppComponents, init: AppInit): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>()

  app.onError((error, context) => {
    if (error instanceof GatewayError) return context.json(error.toJSON(), error.status as 400)
    components.logger.error({ err: error }, 'unhandled error')
    const internal = new GatewayError('internal_error', 'The gateway failed to handle this request; see the node log.')
    return context.json(internal.toJSON(), 500)
  })
  app.notFound((context) => {
    const error = new GatewayError('not_found', `No route ${context.req.method} ${context.req.path}. Inference is POST /v1/chat/completions.`)
    return context.json(error.toJSON(), 404)
  })

  app.get('/health', (context) => {
    const report = components.health.report()
    return context.json(report, report.status === 'draining' ? 503 : 200)
  })
  app.use('/api/*', adminAuth(init.adminTokens))
  app.route('/api', providersApi(components.directory, init.env))
  app.route('/api', adaptiveApi(components.adaptive))
  app.get('/api/cluster', async (context) => context.json(await components.clusterView()))
  app.get('/metrics', async (context) => context.body(await components.metrics.registry.metrics(), 200, { 'content-type': components.metrics.registry.contentType }))

  app.on(['GET', 'PUT', 'DELETE', 'PATCH'], '/v1/chat/completions', () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/chat/completions.')
  })
  return app
}
