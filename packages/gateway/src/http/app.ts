/** The HTTP side of one gateway node: the request listener, and the Hono app of every route but inference. */
import { Hono } from 'hono'
import { getRequestListener, type HttpBindings } from '@hono/node-server'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { GatewayError, asGatewayError } from '../errors.ts'
import { CHAT_SPEC, isInferencePath } from './inference.ts'
import { createInferenceRoute, type InferenceComponents, type InferenceInit } from './pipeline.ts'
import { anthropicErrorBody, surfaceRoute } from './surface-route.ts'
import { newRequestId, type HistoryQueries } from '@switchboard/history'
import { COUNT_TOKENS_SPEC, MESSAGES_SPEC } from './messages.ts'
import { RESPONSES_SPEC } from './responses.ts'
import { EMBEDDINGS_SPEC } from './embeddings.ts'
import { modelsApi } from './models.ts'
import { adminAuth, originGuard } from '../admin/auth.ts'
import type { AdminToken } from '../access/tokens.ts'
import { authenticateCaller } from '../access/callers.ts'
import { providersApi } from '../admin/providers-api.ts'
import type { ProviderDirectory } from '../directory/directory.ts'
import { healthStatusCode, type DatabaseHealth } from '../directory/health.ts'
import { LIVE } from './early.ts'
import { pathOf } from './surface.ts'
import { adaptiveApi, type AdaptiveApiComponents } from '../admin/adaptive-api.ts'
import type { ClusterView } from '../fleet/view.ts'
import { historyApi } from '../admin/history-api.ts'
import { gatewayKeysApi, type GatewayKeysApiComponents } from '../admin/gateway-keys-api.ts'
import { logsApi, type LogsApiComponents } from '../admin/logs-api.ts'
import { serveDashboard } from './dashboard.ts'

export interface AppComponents extends InferenceComponents {
  directory: ProviderDirectory
  health: DatabaseHealth
  adaptive: AdaptiveApiComponents
  clusterView: () => Promise<ClusterView>
  /** The history queries (issue 14); null when history is not running. */
  history?: () => HistoryQueries | null
  gatewayKeys: GatewayKeysApiComponents
  logs: LogsApiComponents
}

export interface AppInit extends InferenceInit {
  adminTokens: readonly AdminToken[]
  /** Browser origins besides the node's own allowed on the admin API (`server.allowed_origins`). */
  allowedOrigins?: readonly string[]
  env: NodeJS.ProcessEnv
}

/**
 * The request listener of one node: the inference routes go straight to their handlers, without
 * Hono's web Request and Response (a good share of the gateway's CPU on Node 20); everything
 * else to the Hono app.
 */
export function createListener(components: AppComponents, init: AppInit): (incoming: IncomingMessage, outgoing: ServerResponse) => void {
  const hono = getRequestListener(createApp(components, init).fetch)
  const inference = createInferenceRoute(components, init, CHAT_SPEC)
  const surfaces = new Map([
    ['/v1/messages', createInferenceRoute(components, init, surfaceRoute(MESSAGES_SPEC))],
    ['/v1/messages/count_tokens', createInferenceRoute(components, init, surfaceRoute(COUNT_TOKENS_SPEC))],
    ['/v1/responses', createInferenceRoute(components, init, surfaceRoute(RESPONSES_SPEC))],
    ['/v1/embeddings', createInferenceRoute(components, init, surfaceRoute(EMBEDDINGS_SPEC))],
  ])
  return (incoming, outgoing) => {
    if (incoming.method === 'POST') {
      if (isInferencePath(incoming.url)) return void inference(incoming, outgoing)
      const surface = surfaces.get(pathOf(incoming.url))
      if (surface !== undefined) return void surface(incoming, outgoing)
    }
    void hono(incoming, outgoing)
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
    const error = new GatewayError('not_found', `No route ${context.req.method} ${context.req.path}. Inference is POST /v1/chat/completions, /v1/messages, /v1/responses or /v1/embeddings; models are GET /v1/models.`)
    return context.json(error.toJSON(), 404)
  })

  // Readiness (503 while starting or draining) and liveness (200 while the process answers) for probes.
  app.get('/health', (context) => {
    const report = components.health.report()
    return context.json(report, healthStatusCode(report))
  })
  app.get('/health/live', (context) => context.json(LIVE))
  const access = { tokens: init.adminTokens, allowedOrigins: init.allowedOrigins ?? [] }
  app.use('/api/*', adminAuth(access))
  // Pages a browser loads (the dashboard at /): the Origin rules; their data comes from /api.
  const pages = originGuard(access)
  app.use('*', (context, next) => (isOpenOrGuarded(context.req.path) ? next() : pages(context, next)))
  app.route('/api', providersApi(components.directory, init.env))
  app.route('/api', adaptiveApi(components.adaptive))
  app.route('/api', historyApi(components.history ?? (() => null)))
  app.route('/api', gatewayKeysApi(components.gatewayKeys))
  app.route('/api', logsApi(components.logs))
  app.get('/api/cluster', async (context) => context.json(await components.clusterView()))
  serveDashboard(app, init.adminTokens)
  app.get('/metrics', async (context) => context.body(await (components.metrics.render?.() ?? components.metrics.registry.metrics()), 200, { 'content-type': components.metrics.registry.contentType }))

  // Inference routes Hono serves (GET /v1/models, wrong methods) check the caller like the POST surfaces do.
  app.use('/v1/*', async (context, next) => {
    await authenticateCaller(components.callers, context.env.incoming)
    await next()
  })
  app.route('/v1', modelsApi({ registry: () => components.directory.registry, isRouteOffered: (route) => components.adaptive.balancer.isRouteOffered(route) }))
  for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/messages/count_tokens', '/v1/responses', '/v1/embeddings']) {
    app.on(['GET', 'PUT', 'DELETE', 'PATCH'], path, (context) => {
      const error = new GatewayError('method_not_allowed', `Use POST for ${path}.`)
      // The Anthropic routes answer in Anthropic's error shape, as their callers read it.
      if (path.startsWith('/v1/messages')) return context.json(anthropicErrorBody(error, newRequestId(Date.now())), 405)
      throw error
    })
  }
  return app
}

/** Paths with their own rules: /api/* (admin auth), /v1/* (gateway keys), and the open /health, /health/live and /metrics. */
function isOpenOrGuarded(path: string): boolean {
  return path.startsWith('/api/') || path.startsWith('/v1/') || path === '/health' || path === '/health/live' || path === '/metrics'
}
