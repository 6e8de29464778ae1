/** The Anthropic adapter: chat.completions in, Messages API on the wire, chat.completions out. */
import { createDispatcher, splitBaseUrl, withExtraHeaders } from '../http/transport.ts'
import { parseSse } from '../http/sse.ts'
import { sendOpenAiShaped, sendTranslated, translating, upstreamBody, upstreamCall, upstreamModel } from '../send.ts'
import { anthropicStreamToOpenAI, fromAnthropicResponse, toAnthropicRequest } from './index.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest } from '../types.ts'

/** The Messages API version we speak. */
export const ANTHROPIC_VERSION = '2023-06-01'

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
      const createdSeconds = Math.floor(now() / 1000)
      return sendTranslated(dispatcher, upstreamCall(target, headers, body, request), request.body, now, {
        stream: (events) => anthropicStreamToOpenAI(parseSse(events), { model: request.model, createdSeconds }),
        json: (message) => fromAnthropicResponse(message, request.model, createdSeconds),
        what: 'a body that is not a Message',
      })
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
