import type { IncomingHttpHeaders } from 'node:http'
import type { Answer, AnswerContext, ChatRequest, Dialect, FaultContext } from '../dialects/dialect.ts'
import { jsonAnswer } from '../dialects/dialect.ts'
import type { Reply } from '../reply/content.ts'
import { goDuration, retryAfterSeconds } from '../reply/format.ts'
import type { RateDecision, RateView } from '../rules/rate-window.ts'
import { completionBody, parseChatBody, streamEvents } from './body.ts'
import { openaiErrorBody, openaiFault, openaiRateMessage } from './errors.ts'

/** Reads `Authorization: Bearer <key>`, which OpenAI and Azure (with Entra tokens) accept. */
export function bearerKey(headers: IncomingHttpHeaders): string | undefined {
  const value = headers.authorization
  if (value === undefined || !value.startsWith('Bearer ')) return undefined
  const key = value.slice(7).trim()
  return key.length > 0 ? key : undefined
}

function rateHeaders(headers: string[], rate: RateView): string[] {
  headers.push(
    'x-ratelimit-limit-requests', String(rate.requestsLimit),
    'x-ratelimit-limit-tokens', String(rate.tokensLimit),
    'x-ratelimit-remaining-requests', String(rate.requestsRemaining),
    'x-ratelimit-remaining-tokens', String(rate.tokensRemaining),
    'x-ratelimit-reset-requests', goDuration(rate.requestsResetMs),
    'x-ratelimit-reset-tokens', goDuration(rate.tokensResetMs),
  )
  return headers
}

function baseHeaders(requestId: string): string[] {
  return ['x-request-id', requestId, 'openai-organization', 'org-simulator', 'openai-processing-ms', '1', 'openai-version', '2020-10-01']
}

function error(status: number, requestId: string, body: string, extra: string[] = []): Answer {
  return jsonAnswer(status, baseHeaders(requestId).concat(extra), body)
}

/** OpenAI's Chat Completions API. */
export const openaiDialect: Dialect = {
  provider: 'openai',
  readKey: bearerKey,
  missingKey: (requestId) => error(401, requestId, openaiErrorBody(
    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
    'invalid_request_error', null, null)),
  checkHeaders: () => undefined,
  invalidJson: (requestId) => error(400, requestId, openaiErrorBody(
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
    'invalid_request_error', null, null)),
  parse: (body, _deployment, _apiVersion, requestId) =>
    parseChatBody(body, undefined, undefined, (message, param, code) =>
      error(400, requestId, openaiErrorBody(message, 'invalid_request_error', param, code))),
  complete(chat: ChatRequest, reply: Reply, context: AnswerContext): Answer {
    const body = completionBody(chat, reply, context.ids.next('chatcmpl-'), context.ids.next('call_'), Math.floor(context.now / 1000), 'openai')
    return jsonAnswer(200, rateHeaders(baseHeaders(context.requestId), context.rate), body)
  },
  stream(chat, reply, context) {
    const headers = rateHeaders(baseHeaders(context.requestId), context.rate)
    headers.push('content-type', 'text/event-stream; charset=utf-8', 'cache-control', 'no-cache')
    return {
      headers,
      chunks: streamEvents(chat, reply, context.ids.next('chatcmpl-'), context.ids.next('call_'), Math.floor(context.now / 1000), 'openai'),
    }
  },
  fault(preset, context: FaultContext) {
    const shape = openaiFault(preset, context)
    return error(shape.status, context.requestId, shape.body, shape.headers)
  },
  rateLimited(decision: Extract<RateDecision, { allowed: false }>, context: FaultContext) {
    const wait = goDuration(decision.retryAfterMs)
    const message = openaiRateMessage(context.model, decision.kind, decision.limit, decision.used, decision.requested, wait)
    const headers = rateHeaders(['retry-after', String(retryAfterSeconds(decision.retryAfterMs))], decision.view)
    return error(429, context.requestId, openaiErrorBody(message, decision.kind, null, 'rate_limit_exceeded'), headers)
  },
}
