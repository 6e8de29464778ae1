/** The Hono app: routes, body limits, and the one place errors become HTTP answers. */
import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import type { Logger } from 'pino'
import { GatewayError } from '../errors.ts'
import { serveChat, type EngineComponents } from '../inference/engine.ts'
import { renderJson, renderStream } from '../inference/render.ts'
import { validateChatRequest } from '../inference/validate.ts'

export interface AppComponents extends EngineComponents {
  logger: Logger
}

export interface AppInit {
  maxRequestBodyBytes: number
}

/** Builds the HTTP app of one gateway node. */
export function createApp(components: AppComponents, init: AppInit): Hono {
  const app = new Hono()

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

  app.get('/health', (context) => context.json({ status: 'ok' }))

  const limit = bodyLimit({
    maxSize: init.maxRequestBodyBytes,
    onError: () => {
      throw new GatewayError('request_too_large', `The request body is larger than this gateway accepts (${init.maxRequestBodyBytes} bytes). Send a smaller request, or raise server.max_request_body_bytes in config.json.`)
    },
  })

  app.post('/v1/chat/completions', limit, async (context) => {
    const contentType = context.req.header('content-type')
    if (contentType !== undefined && !contentType.toLowerCase().includes('json')) {
      throw new GatewayError('unsupported_media_type', `Send the body as JSON with "content-type: application/json" (got "${contentType}").`)
    }
    const text = await context.req.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      throw new GatewayError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`)
    }
    const request = validateChatRequest(json)
    const served = await serveChat(components, request, context.req.raw.signal)
    return served.success.kind === 'stream' ? renderStream(context, served) : renderJson(context, served)
  })
  app.on(['GET', 'PUT', 'DELETE', 'PATCH'], '/v1/chat/completions', () => {
    throw new GatewayError('method_not_allowed', 'Use POST for /v1/chat/completions.')
  })
  return app
}
