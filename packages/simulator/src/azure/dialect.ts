import type { IncomingHttpHeaders } from 'node:http'
import type { Answer, Dialect } from '../dialects/dialect.ts'
import { jsonAnswer } from '../dialects/dialect.ts'
import { completionBody, parseChatBody, streamEvents } from '../openai/body.ts'
import { bearerKey } from '../openai/dialect.ts'
import { openaiErrorBody } from '../openai/errors.ts'
import type { RateView } from '../rules/rate-window.ts'
import { retryAfterSeconds } from '../reply/format.ts'
import { accessDeniedMessage, azureErrorBody, azureFault, azureRateMessage } from './errors.ts'

function baseHeaders(requestId: string): string[] {
  return ['apim-request-id', requestId, 'x-request-id', requestId, 'x-ms-region', 'Simulated Region', 'x-ms-client-request-id', requestId]
}

/** Azure reports what is left (and, in newer versions, the limits); no reset headers. */
function rateHeaders(headers: string[], rate: RateView): string[] {
  headers.push(
    'x-ratelimit-limit-requests', String(rate.requestsLimit),
    'x-ratelimit-limit-tokens', String(rate.tokensLimit),
    'x-ratelimit-remaining-requests', String(rate.requestsRemaining),
    'x-ratelimit-remaining-tokens', String(rate.tokensRemaining),
  )
  return headers
}

function error(status: number, requestId: string, body: string, extra: string[] = []): Answer {
  return jsonAnswer(status, baseHeaders(requestId).concat(extra), body)
}

/** Azure's 404 for a path it does not serve, including a missing `api-version`. */
export function azureNotFound(requestId: string): Answer {
  return error(404, requestId, azureErrorBody('404', 'Resource not found'))
}

/** Azure OpenAI: `api-key` header, the deployment in the path, OpenAI's bodies with content-filter annotations. */
export const azureDialect: Dialect = {
  provider: 'azure',
  readKey(headers: IncomingHttpHeaders) {
    const key = headers['api-key']
    if (typeof key === 'string' && key.length > 0) return key
    return bearerKey(headers)
  },
  missingKey: (requestId) => error(401, requestId, azureErrorBody('401', accessDeniedMessage)),
  checkHeaders: () => undefined,
  invalidJson: (requestId) => error(400, requestId, openaiErrorBody(
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
    'invalid_request_error', null, null)),
  parse: (body, deployment, apiVersion, requestId) =>
    parseChatBody(body, deployment, apiVersion, (message, param, code) =>
      error(400, requestId, openaiErrorBody(message, 'invalid_request_error', param, code))),
  complete(chat, reply, context) {
    const body = completionBody(chat, reply, context.ids.next('chatcmpl-'), context.ids.next('call_'), Math.floor(context.now / 1000), 'azure')
    return jsonAnswer(200, rateHeaders(baseHeaders(context.requestId), context.rate), body)
  },
  stream(chat, reply, context) {
    const headers = rateHeaders(baseHeaders(context.requestId), context.rate)
    headers.push('content-type', 'text/event-stream; charset=utf-8', 'cache-control', 'no-cache')
    return {
      headers,
      chunks: streamEvents(chat, reply, context.ids.next('chatcmpl-'), context.ids.next('call_'), Math.floor(context.now / 1000), 'azure'),
    }
  },
  fault(preset, context) {
    const shape = azureFault(preset, context)
    return error(shape.status, context.requestId, shape.body, shape.headers)
  },
  rateLimited(decision, context) {
    const seconds = retryAfterSeconds(decision.retryAfterMs)
    const headers = rateHeaders(['retry-after', String(seconds), 'retry-after-ms', String(Math.ceil(decision.retryAfterMs))], decision.view)
    return error(429, context.requestId, azureErrorBody('429', azureRateMessage(decision.kind, context.apiVersion, seconds)), headers)
  },
}
