/** The Anthropic adapter: chat.completions in, Messages API on the wire, chat.completions out. */
import { createDispatcher, splitBaseUrl, withExtraHeaders } from '../http/transport.ts'
import { parseSse } from '../http/sse.ts'
import { sendOpenAiShaped, sendTranslated, translating, upstreamBody, upstreamCall, upstreamModel, type Translation } from '../send.ts'
import { toAnthropicRequest } from './request.ts'
import { fromAnthropicResponse } from './response.ts'
import { anthropicStreamToOpenAI } from './stream.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest } from '../types.ts'

/** The Messages API version we speak. */
export const ANTHROPIC_VERSION = '2023-06-01'

/** How Anthropic's answers (a Message, or its stream's events) read into chat, reported for `model` (also Claude on Vertex). */
export function anthropicTranslation(model: string, createdSeconds: number): Translation {
  return { stream: (events) => anthropicStreamToOpenAI(parseSse(events), { model, createdSeconds }), json: (message) => fromAnthropicResponse(message, model, createdSeconds) }
}

/** Creates an adapter for Anthropic's Messages API. */
export function createAnthropicAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher(init.network)
  const target = splitBaseUrl(init.network.base_url, '/v1/messages')
  const countTarget = splitBaseUrl(init.network.base_url, '/v1/messages/count_tokens')
  return {
    name: init.name,
    type: 'anthropic',
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const body = translating(() => JSON.stringify(toAnthropicRequest(request.body, upstreamModel(request))))
      if (typeof body !== 'string') return body
      const headers = withExtraHeaders({ 'content-type': 'application/json', 'x-api-key': request.key.value, 'anthropic-version': ANTHROPIC_VERSION }, init.network.extra_headers)
      return sendTranslated(dispatcher, upstreamCall(target, headers, body, request), request.body, now, anthropicTranslation(request.model, Math.floor(now() / 1000)))
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
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': request.key.value, 'anthropic-version': request.headers['anthropic-version'] ?? ANTHROPIC_VERSION }
      const beta = request.headers['anthropic-beta']
      if (beta !== undefined) headers['anthropic-beta'] = beta
      const call = upstreamCall(request.surface === 'count_tokens' ? countTarget : target, withExtraHeaders(headers, init.network.extra_headers), upstreamBody(request.body, upstreamModel(request)), request)
      return sendOpenAiShaped(dispatcher, call, request.stream, now, 'messages')
    },
    close: () => dispatcher.close(),
  }
}
