/** The Hono app: routes, body limits, and the one place errors become HTTP answers. */
import { Hono } from 'hono'
import type { HttpBindings } from '@hono/node-server'
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

/** Builds the HTTP app of one gateway node. */
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

  app.post('/v1/chat/completions', async (context) => {
    const { incoming, outgoing } = context.env
    const contentType = incoming.headers['content-type']
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
    const headers = incoming.headers
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
    return served.success.kind === 'stream' ? renderStream(outgoing, served) : renderJson(outgoing, served)
  })
  app.on(['GET', 'PUT', 'DELETE', 'PATCH'], '/v1/chat/completions', () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/chat/completions.')
  })
  return app
}
