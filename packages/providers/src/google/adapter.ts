/**
 * The Gemini API and Vertex AI adapters: chat.completions in, generateContent (SSE for a stream)
 * on the wire, chat.completions out. `gemini` sends the key's `value` as `x-goog-api-key`;
 * `vertex` an OAuth2 token of the key's service account (tokens.ts), on its project's regional
 * endpoint. Claude on Vertex is reached through rawPredict in Anthropic's format (a Messages
 * request natively); Anthropic betas it refuses are learned from its 400 and left out (betas.ts).
 */
import { anthropicTranslation } from '../anthropic/adapter.ts'
import { toAnthropicRequest } from '../anthropic/request.ts'
import { leftOutNote, RefusedBetas } from '../anthropic/betas.ts'
import { attemptFailure } from '../errors/classify.ts'
import { parseSse } from '../http/sse.ts'
import { createDispatcher, splitBaseUrl, withExtraHeaders } from '../http/transport.ts'
import { sendOpenAiShaped, sendTranslated, translating, upstreamCall, upstreamModel, type Translation } from '../send.ts'
import { sendSurface } from '../surfaces/index.ts'
import type { AttemptFailed, AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest, VertexKeyConfig } from '../types.ts'
import { fromGenerateContentResponse, toGenerateContentRequest } from './generate.ts'
import { geminiStreamToOpenAI } from './stream.ts'
import { TokenError, tokenSourceFor } from './tokens.ts'

/** The Gemini API's public endpoint. */
export const GEMINI_API_URL = 'https://generativelanguage.googleapis.com'

/** The `anthropic_version` Vertex's Claude endpoints take in the body. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16'

/** True for a model Vertex serves from Anthropic's publisher (rawPredict in Anthropic's format). */
export function isVertexClaude(model: string): boolean {
  return model.startsWith('claude')
}

/** Creates an adapter for the Gemini API (`type: 'gemini'`) or Vertex AI (`type: 'vertex'`). */
export function createGoogleAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher(init.network)
  const vertex = init.type === 'vertex'
  // The Gemini API base without a version suffix (`/v1beta` is added per call).
  const geminiBase = (init.network.base_url === '' ? GEMINI_API_URL : init.network.base_url).replace(/\/+$/, '').replace(/\/v1(beta)?$/, '')
  let responseIds = 0

  /** A Vertex key's endpoint (its region's, `global` having no regional host, unless base_url says otherwise) for `model` of `publisher`. */
  function vertexTarget(config: VertexKeyConfig, publisher: string, model: string, method: string): { origin: string; path: string } {
    const host = config.region === 'global' ? 'aiplatform.googleapis.com' : `${config.region}-aiplatform.googleapis.com`
    const where = `/v1/projects/${encodeURIComponent(config.project_id)}/locations/${encodeURIComponent(config.region)}`
    return splitBaseUrl(init.network.base_url === '' ? `https://${host}` : init.network.base_url, `${where}/publishers/${publisher}/models/${encodeURIComponent(model)}:${method}`)
  }

  /**
   * Calls with a Vertex token of the key's service account. A 401 is retried once with a fresh
   * token (`token.force`, kept across the calls of one request) before it counts.
   */
  async function withToken(credentials: string, extra: Record<string, string>, token: { force: boolean }, call: (headers: Record<string, string>) => Promise<AttemptResult>): Promise<AttemptResult> {
    for (;;) {
      let value: string
      try {
        value = await tokenSourceFor(credentials).token(token.force)
      } catch (error) {
        return tokenFailure(error)
      }
      const result = await call(withExtraHeaders({ 'content-type': 'application/json', authorization: `Bearer ${value}`, ...extra }, init.network.extra_headers))
      if (result.ok || result.failure.status !== 401 || token.force) return result
      token.force = true
    }
  }

  const adapter: ProviderAdapter = {
    name: init.name,
    type: init.type,
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const model = upstreamModel(request)
      const stream = request.body.stream === true
      const config = request.key.vertex_key_config
      if (vertex && config === undefined) return misconfigured('the key has no vertex_key_config (project_id, region, auth_credentials)')
      const claude = vertex && isVertexClaude(model)
      const body = translating(() => {
        if (!claude) return JSON.stringify(toGenerateContentRequest(request.body, model))
        const { model: _model, ...anthropic } = toAnthropicRequest(request.body, model)
        return JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...anthropic })
      })
      if (typeof body !== 'string') return body
      const createdSeconds = Math.floor(now() / 1000)
      const id = `chatcmpl-${init.type}-${createdSeconds.toString(36)}-${(responseIds++).toString(36)}`
      const translation: Translation = claude
        ? anthropicTranslation(request.model, createdSeconds)
        : { stream: (events) => geminiStreamToOpenAI(parseSse(events), { id, model: request.model, createdSeconds }), json: (parsed) => fromGenerateContentResponse(parsed, request.model, createdSeconds, id) }
      if (!vertex) {
        const target = splitBaseUrl(geminiBase, `/v1beta/models/${encodeURIComponent(model)}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`)
        const headers = withExtraHeaders({ 'content-type': 'application/json', 'x-goog-api-key': request.key.value }, init.network.extra_headers)
        return sendTranslated(dispatcher, upstreamCall(target, headers, body, request), request.body, now, translation)
      }
      const method = claude ? (stream ? 'streamRawPredict' : 'rawPredict') : stream ? 'streamGenerateContent?alt=sse' : 'generateContent'
      const target = vertexTarget(config!, claude ? 'anthropic' : 'google', model, method)
      return withToken(config!.auth_credentials ?? request.key.value, {}, { force: false }, (headers) => sendTranslated(dispatcher, upstreamCall(target, headers, body, request), request.body, now, translation))
    },
    // Claude on Vertex takes Anthropic's Messages bodies as they are (rawPredict): Claude Code's requests keep every field.
    ...(vertex ? { speaks: (surface: Surface) => surface === 'messages', sendNative, continues: isVertexClaude } : {}),
    close: () => dispatcher.close(),
  }
  /** The same adapter without native surfaces: what a Gemini model's Messages request is translated through. */
  const translated: ProviderAdapter = { name: adapter.name, type: adapter.type, send: adapter.send, close: adapter.close }

  /** Anthropic beta flags this Vertex endpoint refused, learned from its answers. */
  const refusedBetas = new RefusedBetas()
  /** A Messages request natively to Claude on Vertex (the caller's body, `anthropic_version` set, `model` in the path). */
  async function sendNative(request: SurfaceRequest): Promise<AttemptResult> {
    const model = upstreamModel(request)
    const config = request.key.vertex_key_config
    if (!isVertexClaude(model) || config === undefined) return sendSurface(translated, request)
    const { model: _model, ...body } = request.body
    const payload = JSON.stringify({ ...body, anthropic_version: VERTEX_ANTHROPIC_VERSION })
    const target = vertexTarget(config, 'anthropic', model, request.stream ? 'streamRawPredict' : 'rawPredict')
    const token = { force: false }
    let beta = refusedBetas.filter(request.headers['anthropic-beta'])
    let sent: AttemptResult | undefined
    // Anthropic's answers and events have OpenAI's framing (JSON, SSE data lines): the same reader serves both.
    const attempt = () => withToken(config.auth_credentials ?? request.key.value, beta.header !== undefined ? { 'anthropic-beta': beta.header } : {}, token, async (headers) => (sent = await sendOpenAiShaped(dispatcher, upstreamCall(target, headers, payload, request), request.stream, now, 'messages')))
    let result = await attempt()
    // Beta flags Vertex refuses (betas.ts): sent once more without them, and left out from now on.
    if (!result.ok && result.failure.status === 400 && refusedBetas.learn(result.failure.message, beta.header)) {
      beta = refusedBetas.filter(request.headers['anthropic-beta'])
      result = await attempt()
    }
    if (result === sent && beta.leftOut.length > 0) result.notes = [leftOutNote(`${init.name} (Claude on Vertex AI)`, beta.leftOut)]
    return result
  }
  return adapter
}

/** A service account whose token cannot be had: refused by the token endpoint holds the key; a network failure is transient. */
function tokenFailure(error: unknown): AttemptFailed {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof TokenError && error.status >= 400 && error.status < 500) return { ok: false, failure: attemptFailure('credential', error.status, message, 'invalid_grant', 'key'), headers: {} }
  if (error instanceof TokenError) return { ok: false, failure: attemptFailure('transient', error.status, message, null), headers: {} }
  // Credentials that do not parse: the key is unusable until its config is fixed.
  return misconfigured(message)
}

function misconfigured(message: string): AttemptFailed {
  return { ok: false, failure: attemptFailure('credential', 0, `Vertex AI key misconfigured: ${message}`, 'invalid_credentials', 'key'), headers: {} }
}
