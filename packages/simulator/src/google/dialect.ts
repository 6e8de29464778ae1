/**
 * Google's generative front ends (their paths: server.ts): the Gemini API, keyed by `x-goog-api-key`, and
 * Vertex AI, its Claude models in Anthropic's Messages format. Every Vertex request carries an OAuth2 access token
 * the simulator's token endpoint issued (tokens.ts), refused once expired, and is recorded and matched by rules
 * under the service account's email.
 */
import { headerKey, shape, type Answer, type AnswerContext, type ChatRequest, type Dialect } from '../dialects/dialect.ts'
import { messageBody, messageErrorEvents, messageEvents, parseMessagesBody } from '../anthropic/body.ts'
import { anthropicErrorBody } from '../anthropic/errors.ts'
import { bearerKey } from '../openai/dialect.ts'
import type { Reply } from '../reply/content.ts'
import { contentResponse, generateContentChunks, parseGenerateContent, sseData } from './body.ts'
import { errorInfo, googleError, googleFaults, SERVICE, type GoogleSurface } from './errors.ts'
import { retryAfterSeconds } from '../reply/format.ts'
import type { TokenBook } from './tokens.ts'

function answer(bare: Answer, requestId: string): Answer {
  const headers = ['x-request-id', requestId, 'server', 'scaffolding on HTTPServer2', ...bare.headers]
  if (!bare.headers.some((name, index) => index % 2 === 0 && name === 'content-type')) headers.push('content-type', 'application/json; charset=UTF-8')
  headers.push('content-length', String(Buffer.byteLength(bare.body)))
  return { status: bare.status, headers, body: bare.body }
}

function sseHeaders(requestId: string): string[] {
  return ['x-request-id', requestId, 'content-type', 'text/event-stream', 'cache-control', 'no-cache']
}

/** The parts every Gemini-format dialect shares; `surface` picks the front end's error wording. */
function geminiFormat(surface: GoogleSurface, stream: boolean): Omit<Dialect, 'provider' | 'readKey' | 'missingKey'> {
  return {
    invalidJson: (requestId) => answer(googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Unexpected token.'), requestId),
    parse(body, model, _apiVersion, requestId) {
      const parsed = parseGenerateContent(body, model ?? '', stream)
      return 'refusal' in parsed ? answer(googleError(400, 'INVALID_ARGUMENT', parsed.refusal), requestId) : parsed
    },
    complete: (chat, reply, context) => answer(shape(200, JSON.stringify(contentResponse(chat, reply, reply.text, true, context.ids.next('resp_')))), context.requestId),
    stream: (chat, reply, context) => ({ headers: sseHeaders(context.requestId), chunks: generateContentChunks(chat, reply, context.ids.next('resp_')).map(sseData) }),
    streamError(chat, reply, context, message) {
      const chunks = generateContentChunks(chat, reply, context.ids.next('resp_'))
      const sent = chunks.slice(0, Math.max(1, Math.floor(chunks.length / 2))).filter((chunk) => !JSON.stringify(chunk).includes('finishReason')).map(sseData)
      sent.push(sseData({ error: { code: 503, message: message ?? 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } }))
      return { headers: sseHeaders(context.requestId), chunks: sent }
    },
    fault: (preset, context) => answer(googleFaults[preset](context, surface), context.requestId),
    rateLimited: (decision, context) => answer(googleFaults.rate_limit({ ...context, retryAfterS: retryAfterSeconds(decision.retryAfterMs) }, surface), context.requestId),
  }
}

/** The Gemini API: an API key in `x-goog-api-key`. */
export function geminiDialect(stream: boolean): Dialect {
  return {
    provider: 'gemini',
    readKey: headerKey('x-goog-api-key'),
    missingKey: (requestId) => answer(googleError(403, 'PERMISSION_DENIED', 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.'), requestId),
    ...geminiFormat('gemini', stream),
  }
}

/** How Vertex checks the bearer token: issued by the token endpoint and not expired. */
function vertexAuth(tokens: TokenBook): Pick<Dialect, 'readKey' | 'missingKey' | 'authenticate'> {
  return {
    readKey(headers) {
      const token = bearerKey(headers)
      return token === undefined ? undefined : (tokens.lookup(token)?.email ?? token)
    },
    missingKey: (requestId) => answer(googleError(401, 'UNAUTHENTICATED', 'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.', [
      errorInfo('CREDENTIALS_MISSING', SERVICE.vertex),
    ]), requestId),
    authenticate(request, _body, requestId) {
      const token = bearerKey(request.headers) ?? ''
      const issued = tokens.lookup(token)
      if (issued !== undefined && issued.expiresAt > Date.now()) return undefined
      const reason = issued === undefined ? 'ACCESS_TOKEN_TYPE_UNSUPPORTED' : 'ACCESS_TOKEN_EXPIRED'
      return answer(googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.', [
        errorInfo(reason, SERVICE.vertex, { method: 'google.cloud.aiplatform.v1.PredictionService.GenerateContent' }),
      ]), requestId)
    },
  }
}

/** Vertex AI's Gemini models. */
export function vertexDialect(tokens: TokenBook, stream: boolean): Dialect {
  return { provider: 'vertex', ...vertexAuth(tokens), ...geminiFormat('vertex', stream) }
}

/** The `anthropic_version` Vertex's Claude endpoints require in the body. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16'

/** Claude on Vertex AI: Anthropic's Messages format through rawPredict / streamRawPredict, Vertex's auth and errors. */
export function vertexClaudeDialect(tokens: TokenBook, stream: boolean): Dialect {
  const base = geminiFormat('vertex', stream)
  const refuse = (message: string, requestId: string) => answer(shape(400, anthropicErrorBody('invalid_request_error', message, requestId)), requestId)
  const events = (chat: ChatRequest, reply: Reply, context: AnswerContext) => messageEvents(chat, reply, context.ids.next('msg_vrtx_'), context.ids.next('toolu_vrtx_'))
  return {
    provider: 'vertex',
    ...vertexAuth(tokens),
    ...base,
    invalidJson: (requestId) => refuse('There was an error parsing the body of your request: invalid JSON', requestId),
    parse(body, model, _apiVersion, requestId) {
      if (body.anthropic_version !== VERTEX_ANTHROPIC_VERSION) return refuse(`anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`, requestId)
      const parsed = parseMessagesBody({ ...body, model: model ?? '' })
      return 'refusal' in parsed ? refuse(parsed.refusal, requestId) : { ...parsed, stream }
    },
    complete: (chat, reply, context) => answer(shape(200, messageBody(chat, reply, context.ids.next('msg_vrtx_'), context.ids.next('toolu_vrtx_'))), context.requestId),
    stream: (chat, reply, context) => ({ headers: sseHeaders(context.requestId), chunks: events(chat, reply, context) }),
    streamError: (chat, reply, context, message) => ({ headers: sseHeaders(context.requestId), chunks: messageErrorEvents(events(chat, reply, context), message) }),
    fault(preset, context) {
      // Anthropic's own overload passes through Vertex as Anthropic wrote it; the rest is Vertex's front end.
      if (preset === 'overloaded') return answer(shape(529, anthropicErrorBody('overloaded_error', context.message ?? 'Overloaded', context.requestId)), context.requestId)
      return base.fault(preset, context)
    },
  }
}
