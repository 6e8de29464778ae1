/** The HTTP side of one gateway node: the request listener, and the Hono app of every route but inference. */
import { Hono } from 'hono'
import { getRequestListener, type HttpBindings } from '@hono/node-server'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { GatewayError, asGatewayError } from '../errors.ts'
import { createInferenceHandler, isInferencePath, type InferenceComponents } from './inference.ts'
import { adminAuth, type AdminToken } from '../admin/auth.ts'
import { providersApi } from '../admin/providers-api.ts'
import type { ProviderDirectory } from '../directory/directory.ts'
import type { DatabaseHealth } from '../directory/health.ts'
import { adaptiveApi, type AdaptiveApiComponents } from '../admin/adaptive-api.ts'
import type { ClusterView } from '../fleet/fleet.ts'
import { historyApi } from '../admin/history-api.ts'
import type { HistoryQueries } from '@switchboard/history'
import { serveDashboard } from './dashboard.ts'

export interface AppComponents extends InferenceComponents {
  directory: ProviderDirectory
  health: DatabaseHealth
  adaptive: AdaptiveApiComponents
  clusterView: () => Promise<ClusterView>
  /** The history queries (issue 14); null when history is not running. */
  history?: () => HistoryQueries | null
}

export interface AppInit {
  maxRequestBodyBytes: number
  /** `client.allow_direct_keys`. */
  allowDirectKeys: boolean
  adminTokens: readonly AdminToken[]
  env: NodeJS.ProcessEnv
}

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

/** Builds the Hono app of one gateway node: every route but the inference one (see `createListener`). */
export function createApp(components: AppComponents, init: AppInit): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>()

  app.onError((error, context) => {
    const answered = asGatewayError(error, components.logger)
    if (answered.retryAfterSeconds !== null) context.header('retry-after', String(answered.retryAfterSeconds))
    return context.json(answered.toJSON(), answered.status as 400)
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
  app.route('/api', historyApi(components.history ?? (() => null)))
  app.get('/api/cluster', async (context) => context.json(await components.clusterView()))
  serveDashboard(app, { adminTokens: init.adminTokens })
  app.get('/metrics', async (context) => context.body(await components.metrics.registry.metrics(), 200, { 'content-type': components.metrics.registry.contentType }))

  app.on(['GET', 'PUT', 'DELETE', 'PATCH'], '/v1/chat/completions', () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/chat/completions.')
  })
  return app
}
