import type { IncomingHttpHeaders } from 'node:http'
import { jsonAnswer, shape, sseHeaders, type Answer, type AnswerContext, type AnswerPreset, type Dialect, type FaultContext } from '../dialects/dialect.ts'
import { goDuration, retryAfterSeconds } from '../reply/format.ts'
import type { RateDecision, RateView } from '../rules/rate-window.ts'
import { completionBody, parseChatBody, streamEvents, type Flavor } from './body.ts'
import { openaiErrorBody, openaiFaults, openaiRateMessage, type Fault } from './errors.ts'

/** Reads `Authorization: Bearer <key>`, which OpenAI and Azure (with Entra tokens) accept. */
export function bearerKey(headers: IncomingHttpHeaders): string | undefined {
  const value = headers.authorization
  if (value === undefined || !value.startsWith('Bearer ')) return undefined
  const key = value.slice(7).trim()
  return key.length > 0 ? key : undefined
}

/** What sets OpenAI's Chat Completions apart from Azure's, which shares the format. */
export interface ChatFlavor {
  provider: Flavor
  readKey(headers: IncomingHttpHeaders): string | undefined
  baseHeaders(requestId: string): string[]
  missingKeyBody: string
  invalidJsonHint: string
  faults: Record<AnswerPreset, Fault>
  /** The 429 for a key over its scripted rpm/tpm, before the base headers. */
  rateLimited(decision: Extract<RateDecision, { allowed: false }>, context: FaultContext, rateHeaders: (headers: string[], rate: RateView) => string[]): Answer
}

/** A Chat Completions dialect: `flavor`'s keys, headers and errors around OpenAI's bodies. */
export function chatDialect(flavor: ChatFlavor): Dialect {
  const rateHeaders = (headers: string[], rate: RateView): string[] => {
    headers.push(
      'x-ratelimit-limit-requests', String(rate.requestsLimit),
      'x-ratelimit-limit-tokens', String(rate.tokensLimit),
      'x-ratelimit-remaining-requests', String(rate.requestsRemaining),
      'x-ratelimit-remaining-tokens', String(rate.tokensRemaining),
    )
    // OpenAI's say when the limits reset; Azure's only say what is left (and, in newer versions, the limits).
    if (flavor.provider === 'openai') headers.push('x-ratelimit-reset-requests', goDuration(rate.requestsResetMs), 'x-ratelimit-reset-tokens', goDuration(rate.tokensResetMs))
    return headers
  }
  const error = (status: number, requestId: string, body: string, extra: string[] = []): Answer => jsonAnswer(status, flavor.baseHeaders(requestId).concat(extra), body)
  const withBase = (answer: Answer, requestId: string) => error(answer.status, requestId, answer.body, answer.headers)
  const okHeaders = (context: AnswerContext) => rateHeaders(flavor.baseHeaders(context.requestId), context.rate)
  const ids = (context: AnswerContext) => [context.ids.next('chatcmpl-'), context.ids.next('call_'), Math.floor(context.now / 1000)] as const
  return {
    provider: flavor.provider,
    readKey: flavor.readKey,
    missingKey: (requestId) => error(401, requestId, flavor.missingKeyBody),
    invalidJson: (requestId) => error(400, requestId, openaiErrorBody(
      `We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.${flavor.invalidJsonHint})`,
      'invalid_request_error', null, null)),
    parse: (body, deployment, apiVersion, requestId) =>
      parseChatBody(body, deployment, apiVersion, (message, param, code) =>
        error(400, requestId, openaiErrorBody(message, 'invalid_request_error', param, code))),
    complete: (chat, reply, context) => jsonAnswer(200, okHeaders(context), completionBody(chat, reply, ...ids(context), flavor.provider)),
    stream: (chat, reply, context) => ({ headers: [...okHeaders(context), ...sseHeaders], chunks: streamEvents(chat, reply, ...ids(context), flavor.provider) }),
    fault: (preset, context) => withBase(flavor.faults[preset](context), context.requestId),
    rateLimited: (decision, context) => withBase(flavor.rateLimited(decision, context, rateHeaders), context.requestId),
  }
}

/** OpenAI's Chat Completions API. */
export const openaiDialect: Dialect = chatDialect({
  provider: 'openai',
  readKey: bearerKey,
  baseHeaders: (requestId) => ['x-request-id', requestId, 'openai-organization', 'org-simulator', 'openai-processing-ms', '1', 'openai-version', '2020-10-01'],
  missingKeyBody: openaiErrorBody(
    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
    'invalid_request_error', null, null),
  invalidJsonHint: ' If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.',
  faults: openaiFaults,
  rateLimited(decision, context, rateHeaders) {
    const wait = goDuration(decision.retryAfterMs)
    const message = openaiRateMessage(context.model, decision.kind, decision.limit, decision.used, decision.requested, wait)
    const headers = rateHeaders(['retry-after', String(retryAfterSeconds(decision.retryAfterMs))], decision.view)
    return shape(429, openaiErrorBody(message, decision.kind, null, 'rate_limit_exceeded'), headers)
  },
})
