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

export interface AppComponents extends EngineComponents {
  logger: Logger
  directory: ProviderDirectory
  health: DatabaseHealth
}

export interface AppInit {
  maxRequestBodyBytes: number
  adminTokens: readonly AdminToken[]
  env: NodeJS.ProcessEnv
}

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

  app.get('/health', (context) => context.json(components.health.report()))
  app.use('/api/*', adminAuth(init.adminTokens))
  app.route('/api', providersApi(components.directory, init.env))

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
    const served = await serveChat(components, request, caller)
    return served.success.kind === 'stream' ? renderStream(outgoing, served) : renderJson(outgoing, served)
  })
  app.on(['GET', 'PUT', 'DELETE', 'PATCH'], '/v1/chat/completions', () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/chat/completions.')
  })
  return app
}
