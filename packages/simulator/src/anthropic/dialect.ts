import { headerKey, jsonAnswer, sseHeaders, type Answer, type AnswerContext, type ChatRequest, type Dialect } from '../dialects/dialect.ts'
import type { Reply } from '../reply/content.ts'
import { retryAfterSeconds, rfc3339 } from '../reply/format.ts'
import type { RateView } from '../rules/rate-window.ts'
import { messageBody, messageErrorEvents, messageEvents, parseMessagesBody } from './body.ts'
import { anthropicErrorBody, anthropicFault, anthropicRateMessage } from './errors.ts'

function baseHeaders(requestId: string): string[] {
  return ['request-id', requestId, 'anthropic-organization-id', '00000000-0000-4000-8000-000000000000']
}

/** Anthropic states limits, what is left and when it refills (RFC 3339), for requests and tokens. */
function rateHeaders(headers: string[], rate: RateView, now: number): string[] {
  const requestsReset = rfc3339(now + rate.requestsResetMs)
  const tokensReset = rfc3339(now + rate.tokensResetMs)
  headers.push(
    'anthropic-ratelimit-requests-limit', String(rate.requestsLimit),
    'anthropic-ratelimit-requests-remaining', String(rate.requestsRemaining),
    'anthropic-ratelimit-requests-reset', requestsReset,
    'anthropic-ratelimit-tokens-limit', String(rate.tokensLimit),
    'anthropic-ratelimit-tokens-remaining', String(rate.tokensRemaining),
    'anthropic-ratelimit-tokens-reset', tokensReset,
    'anthropic-ratelimit-input-tokens-limit', String(rate.tokensLimit),
    'anthropic-ratelimit-input-tokens-remaining', String(rate.tokensRemaining),
    'anthropic-ratelimit-input-tokens-reset', tokensReset,
  )
  return headers
}

const okHeaders = (context: AnswerContext) => rateHeaders(baseHeaders(context.requestId), context.rate, context.now)
const streamHeaders = (context: AnswerContext) => [...okHeaders(context), ...sseHeaders]
const events = (chat: ChatRequest, reply: Reply, context: AnswerContext) => messageEvents(chat, reply, context.ids.next('msg_'), context.ids.next('toolu_'))

function error(status: number, requestId: string, type: string, message: string, extra: string[] = []): Answer {
  return jsonAnswer(status, baseHeaders(requestId).concat(extra), anthropicErrorBody(type, message, requestId))
}

/** Anthropic's Messages API: `x-api-key`, a required `anthropic-version`, its own events and errors. */
export const anthropicDialect: Dialect = {
  provider: 'anthropic',
  readKey: headerKey('x-api-key'),
  missingKey: (requestId) => error(401, requestId, 'authentication_error', 'x-api-key header is required'),
  authenticate: (request, _body, requestId) => request.headers['anthropic-version'] ? undefined : error(400, requestId, 'invalid_request_error', 'anthropic-version: header is required'),
  invalidJson: (requestId) => error(400, requestId, 'invalid_request_error', 'There was an error parsing the body of your request: invalid JSON'),
  parse(body, _deployment, _apiVersion, requestId) {
    const parsed = parseMessagesBody(body)
    return 'refusal' in parsed ? error(400, requestId, 'invalid_request_error', parsed.refusal) : parsed
  },
  complete: (chat, reply, context) => jsonAnswer(200, okHeaders(context), messageBody(chat, reply, context.ids.next('msg_'), context.ids.next('toolu_'))),
  stream: (chat, reply, context) => ({ headers: streamHeaders(context), chunks: events(chat, reply, context) }),
  streamError: (chat, reply, context, message) => ({ headers: streamHeaders(context), chunks: messageErrorEvents(events(chat, reply, context), message, context.requestId) }),
  fault(preset, context) {
    const answer = anthropicFault(preset, context)
    return jsonAnswer(answer.status, baseHeaders(context.requestId).concat(answer.headers), answer.body)
  },
  rateLimited(decision, context) {
    const headers = rateHeaders(['retry-after', String(retryAfterSeconds(decision.retryAfterMs))], decision.view, Date.now())
    return error(429, context.requestId, 'rate_limit_error', anthropicRateMessage(decision.kind, decision.limit), headers)
  },
}
