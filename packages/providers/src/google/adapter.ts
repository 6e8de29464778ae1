/**
 * The Gemini API and Vertex AI adapters: chat.completions in, generateContent /
 * streamGenerateContent (SSE) on the wire, chat.completions out.
 * - `gemini`: the key's `value` is a Gemini API key, sent as `x-goog-api-key`.
 * - `vertex`: an OAuth2 access token of the key's service account (tokens.ts), on the regional
 *   endpoint of the key's project; Claude models (`claude-*`) go to the Anthropic publisher through
 *   rawPredict / streamRawPredict in Anthropic's Messages format; a Messages-surface request for a
 *   Claude model is sent natively (the caller's body as it came), for a Gemini model translated
 *   through chat. A 401 (a token Google no longer
 *   takes, e.g. revoked or past a clock skew) is retried once with a fresh token before it counts;
 *   Anthropic beta flags Claude on Vertex refuses are learned from its 400 and left out (betas.ts).
 */
import type { Agent } from 'undici'
import { anthropicStreamToOpenAI, fromAnthropicResponse, toAnthropicRequest } from '../anthropic/index.ts'
import { leftOutNote, RefusedBetas } from '../anthropic/betas.ts'
import { upstreamModel } from '../body.ts'
import { asRequested } from '../http/chunks.ts'
import { parseSse } from '../http/sse.ts'
import { connectTimeoutOf, createDispatcher, flattenHeaders, post, postBuffered, readFailure, splitBaseUrl, thrownFailure, withExtraHeaders, type UpstreamRequest } from '../http/transport.ts'
import { sendOpenAiShaped } from '../openai/adapter.ts'
import { sendSurface } from '../surfaces/index.ts'
import type { AttemptFailed, AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest, VertexKeyConfig } from '../types.ts'
import { isCallerTranslationError, normalizedEvents, notSent, streamOf, translatedAnswer } from '../outcome.ts'
import { fromGenerateContentResponse, toGenerateContentRequest } from './generate.ts'
import { geminiStreamToOpenAI } from './stream.ts'
import { TokenError, tokenSourceFor } from './tokens.ts'

/** The Gemini API's public endpoint. */
export const GEMINI_API_URL = 'https://generativelanguage.googleapis.com'

/** The `anthropic_version` Vertex's Claude endpoints take in the body. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16'

/** Vertex AI's endpoint for a region (`global` has no regional host). */
export function vertexUrl(region: string): string {
  return region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`
}

/** True for a model Vertex serves from Anthropic's publisher (rawPredict in Anthropic's format). */
export function isVertexClaude(model: string): boolean {
  return model.startsWith('claude')
}

/** Where a call goes and what it says. */
interface Call {
  path: string
  body: string
  claude: boolean
}

/** Creates an adapter for the Gemini API (`type: 'gemini'`) or Vertex AI (`type: 'vertex'`). */
export function createGoogleAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher: Agent = createDispatcher(connectTimeoutOf(init.network))
  const vertex = init.type === 'vertex'
  let responseIds = 0

  function geminiCall(request: AttemptRequest, model: string, stream: boolean): Call {
    const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent'
    return { path: `/v1beta/models/${encodeURIComponent(model)}:${method}`, body: JSON.stringify(toGenerateContentRequest(request.body, model)), claude: false }
  }

  function vertexCall(request: AttemptRequest, config: VertexKeyConfig, model: string, stream: boolean): Call {
    const where = `/v1/projects/${encodeURIComponent(config.project_id)}/locations/${encodeURIComponent(config.region)}`
    if (isVertexClaude(model)) {
      const { model: _model, ...anthropic } = toAnthropicRequest(request.body, model)
      const body = JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...anthropic })
      return { path: `${where}/publishers/anthropic/models/${encodeURIComponent(model)}:${stream ? 'streamRawPredict' : 'rawPredict'}`, body, claude: true }
    }
    const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent'
    return { path: `${where}/publishers/google/models/${encodeURIComponent(model)}:${method}`, body: JSON.stringify(toGenerateContentRequest(request.body, model)), claude: false }
  }

  async function answer(request: AttemptRequest, call: Call, upstream: UpstreamRequest, stream: boolean, resend: (() => Promise<UpstreamRequest | AttemptFailed>) | null): Promise<AttemptResult> {
    const createdSeconds = Math.floor(now() / 1000)
    const id = `chatcmpl-${init.type}-${createdSeconds.toString(36)}-${(responseIds++).toString(36)}`
    if (stream) {
      let response
      try {
        response = await post(dispatcher, upstream)
      } catch (error) {
        return thrownFailure(error)
      }
      if (response.statusCode === 401 && resend !== null) {
        await response.body.dump()
        const again = await resend()
        return 'ok' in again ? again : answer(request, call, again, stream, null)
      }
      if (response.statusCode < 200 || response.statusCode >= 300) return readFailure(response, now)
      const events = parseSse(response.body)
      const chunks = call.claude
        ? anthropicStreamToOpenAI(events, { model: request.model, createdSeconds })
        : geminiStreamToOpenAI(events, { id, model: request.model, createdSeconds })
      return streamOf(response.statusCode, flattenHeaders(response.headers), normalizedEvents(asRequested(chunks, request.body.stream_options)), now())
    }
    let response
    try {
      response = await postBuffered(dispatcher, upstream)
    } catch (error) {
      return thrownFailure(error)
    }
    if (response.statusCode === 401 && resend !== null) {
      const again = await resend()
      return 'ok' in again ? again : answer(request, call, again, stream, null)
    }
    const translate = (parsed: unknown) => (call.claude ? fromAnthropicResponse(parsed, request.model, createdSeconds) : fromGenerateContentResponse(parsed, request.model, createdSeconds, id))
    return translatedAnswer(response, now, translate, call.claude ? 'a body that is not a Message' : 'a body that is not a generateContent response')
  }

  /** A Vertex token's headers for one call, or the failure to get one. */
  async function vertexHeaders(credentials: string, force: boolean, extra: Record<string, string> = {}): Promise<Record<string, string> | AttemptFailed> {
    let token: string
    try {
      token = await tokenSourceFor(credentials).token(force)
    } catch (error) {
      return tokenFailure(error)
    }
    return withExtraHeaders({ 'content-type': 'application/json', authorization: `Bearer ${token}`, ...extra }, init.network.extra_headers)
  }

  const adapter: ProviderAdapter = {
    name: init.name,
    type: init.type,
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const model = upstreamModel(request)
      const stream = request.body.stream === true
      const config = request.key.vertex_key_config
      if (vertex && config === undefined) return misconfigured('the key has no vertex_key_config (project_id, region, auth_credentials)')
      let call: Call
      try {
        call = vertex ? vertexCall(request, config!, model, stream) : geminiCall(request, model, stream)
      } catch (error) {
        // A body Google cannot be sent faithfully: the caller's 400, before any attempt.
        if (isCallerTranslationError(error)) return notSent(error)
        throw error
      }
      if (!vertex) {
        const target = splitBaseUrl(geminiBase(init.network.base_url), call.path)
        const headers = withExtraHeaders({ 'content-type': 'application/json', 'x-goog-api-key': request.key.value }, init.network.extra_headers)
        return answer(request, call, { origin: target.origin, path: target.path, headers, body: call.body, signal: request.signal, traceparent: request.traceparent }, stream, null)
      }
      const target = splitBaseUrl(init.network.base_url === '' ? vertexUrl(config!.region) : init.network.base_url, call.path)
      const credentials = config!.auth_credentials ?? request.key.value
      const signed = async (force: boolean): Promise<UpstreamRequest | AttemptFailed> => {
        const headers = await vertexHeaders(credentials, force)
        if ('ok' in headers) return headers as AttemptFailed
        return { origin: target.origin, path: target.path, headers, body: call.body, signal: request.signal, traceparent: request.traceparent }
      }
      const first = await signed(false)
      if ('ok' in first) return first
      return answer(request, call, first, stream, () => signed(true))
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
    const where = `/v1/projects/${encodeURIComponent(config.project_id)}/locations/${encodeURIComponent(config.region)}`
    const target = splitBaseUrl(init.network.base_url === '' ? vertexUrl(config.region) : init.network.base_url, `${where}/publishers/anthropic/models/${encodeURIComponent(model)}:${request.stream ? 'streamRawPredict' : 'rawPredict'}`)
    const credentials = config.auth_credentials ?? request.key.value
    let beta = refusedBetas.filter(request.headers['anthropic-beta'])
    let result: AttemptResult | undefined
    let force = false
    let relearned = false
    for (;;) {
      const headers = await vertexHeaders(credentials, force, beta.header !== undefined ? { 'anthropic-beta': beta.header } : {})
      if ('ok' in headers) return headers as AttemptFailed
      // Anthropic's answers and events have OpenAI's framing (JSON, SSE data lines): the same reader serves both.
      result = await sendOpenAiShaped(dispatcher, { origin: target.origin, path: target.path, headers, body: payload, signal: request.signal, traceparent: request.traceparent }, request.stream, now, 'messages')
      if (result.ok) break
      // A 401 is retried once with a fresh token, as for chat.
      if (result.failure.status === 401 && !force) {
        force = true
        continue
      }
      // Beta flags Vertex refuses (betas.ts): sent once more without them, and left out from now on.
      if (result.failure.status === 400 && !relearned && refusedBetas.learn(result.failure.message, beta.header)) {
        relearned = true
        beta = refusedBetas.filter(request.headers['anthropic-beta'])
        continue
      }
      break
    }
    if (beta.leftOut.length > 0) result.notes = [leftOutNote(`${init.name} (Claude on Vertex AI)`, beta.leftOut)]
    return result
  }
  return adapter
}

/** The Gemini API base without a version suffix (`/v1beta` is added per call). */
function geminiBase(baseUrl: string): string {
  const base = baseUrl === '' ? GEMINI_API_URL : baseUrl
  return base.replace(/\/+$/, '').replace(/\/v1(beta)?$/, '')
}

/** A service account whose token cannot be had: refused by the token endpoint holds the key; a network failure is transient. */
function tokenFailure(error: unknown): AttemptFailed {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof TokenError && error.status >= 400 && error.status < 500) {
    return { ok: false, failure: { failureClass: 'credential', scope: 'key', status: error.status, waitHintMs: null, message, code: 'invalid_grant' }, headers: {} }
  }
  if (error instanceof TokenError) return { ok: false, failure: { failureClass: 'transient', scope: 'model', status: error.status, waitHintMs: null, message, code: null }, headers: {} }
  // Credentials that do not parse: the key is unusable until its config is fixed.
  return misconfigured(message)
}

function misconfigured(message: string): AttemptFailed {
  return { ok: false, failure: { failureClass: 'credential', scope: 'key', status: 0, waitHintMs: null, message: `Vertex AI key misconfigured: ${message}`, code: 'invalid_credentials' }, headers: {} }
}
