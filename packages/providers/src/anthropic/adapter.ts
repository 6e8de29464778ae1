/** The Anthropic adapter: chat.completions in, Messages API on the wire, chat.completions out. */
import { connectTimeoutOf, createDispatcher, flattenHeaders, post, postBuffered, readFailure, splitBaseUrl, thrownFailure, withExtraHeaders } from '../http/transport.ts'
import { asRequested } from '../http/chunks.ts'
import { parseSse } from '../http/sse.ts'
import { upstreamModel } from '../body.ts'
import { anthropicStreamToOpenAI, fromAnthropicResponse, toAnthropicRequest } from './index.ts'
import { sendOpenAiShaped } from '../openai/adapter.ts'
import { isCallerTranslationError, normalizedEvents, notSent, streamOf, translatedAnswer } from '../outcome.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest } from '../types.ts'

/** The Messages API version we speak. */
export const ANTHROPIC_VERSION = '2023-06-01'

/** Creates an adapter for Anthropic's Messages API. */
export function createAnthropicAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher(connectTimeoutOf(init.network))
  const target = splitBaseUrl(init.network.base_url, '/v1/messages')
  const countTarget = splitBaseUrl(init.network.base_url, '/v1/messages/count_tokens')
  return {
    name: init.name,
    type: 'anthropic',
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const model = upstreamModel(request)
      let body: string
      try {
        body = JSON.stringify(toAnthropicRequest(request.body, model))
      } catch (error) {
        // A body Anthropic cannot be sent faithfully: the caller's 400, before any attempt.
        if (isCallerTranslationError(error)) return notSent(error)
        throw error
      }
      const headers = withExtraHeaders({ 'content-type': 'application/json', 'x-api-key': request.key.value, 'anthropic-version': ANTHROPIC_VERSION }, init.network.extra_headers)
      const call = { origin: target.origin, path: target.path, headers, body, signal: request.signal, traceparent: request.traceparent }
      const createdSeconds = Math.floor(now() / 1000)
      if (request.body.stream === true) {
        let response
        try {
          response = await post(dispatcher, call)
        } catch (error) {
          return thrownFailure(error)
        }
        if (response.statusCode < 200 || response.statusCode >= 300) return readFailure(response, now)
        const chunks = anthropicStreamToOpenAI(parseSse(response.body), { model: request.model, createdSeconds })
        const events = normalizedEvents(asRequested(chunks, request.body.stream_options))
        return streamOf(response.statusCode, flattenHeaders(response.headers), events, now())
      }
      let response
      try {
        response = await postBuffered(dispatcher, call)
      } catch (error) {
        return thrownFailure(error)
      }
      return translatedAnswer(response, now, (message) => fromAnthropicResponse(message, request.model, createdSeconds), 'a body that is not a Message')
    },
    speaks: (surface: Surface) => surface === 'messages' || surface === 'count_tokens',
    // Anthropic continues from a prefilled assistant turn (its docs: "Prefill Claude's response").
    continues: () => true,
    /**
     * The caller's Messages body as it came, with the upstream's model name; the caller's
     * `anthropic-version` and `anthropic-beta` go along unchanged (Claude Code's gateway
     * requirements), ours only when the caller sent none.
     */
    sendNative(request: SurfaceRequest): Promise<AttemptResult> {
      const where = request.surface === 'count_tokens' ? countTarget : target
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': request.key.value, 'anthropic-version': request.headers['anthropic-version'] ?? ANTHROPIC_VERSION }
      const beta = request.headers['anthropic-beta']
      if (beta !== undefined) headers['anthropic-beta'] = beta
      request.body.model = upstreamModel(request)
      // Anthropic's answers and events have OpenAI's framing (JSON, SSE data lines): the same reader serves both.
      return sendOpenAiShaped(dispatcher, { origin: where.origin, path: where.path, headers: withExtraHeaders(headers, init.network.extra_headers), body: JSON.stringify(request.body), signal: request.signal, traceparent: request.traceparent }, request.stream, now, 'messages')
    },
    close: () => dispatcher.close(),
  }
}
