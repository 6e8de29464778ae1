/**
 * The OpenAI adapter, also used for every OpenAI-compatible upstream (groq, mistral,
 * together, vLLM) through `custom_provider_config.base_provider_type: "openai"`.
 */
import { createDispatcher, splitBaseUrl, withExtraHeaders } from '../http/transport.ts'
import { sendOpenAiShaped, upstreamBody, upstreamCall, upstreamModel } from '../send.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest } from '../types.ts'

/** Creates an adapter for an upstream speaking OpenAI's chat.completions. */
export function createOpenAiAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher(init.network)
  const target = splitBaseUrl(init.network.base_url, '/v1/chat/completions')
  const responsesTarget = splitBaseUrl(init.network.base_url, '/v1/responses')
  const embeddingsTarget = splitBaseUrl(init.network.base_url, '/v1/embeddings')
  // OpenAI itself has the Responses API; an OpenAI-compatible upstream (groq, vLLM, ...) is taken to speak chat only.
  const speaksResponses = init.name === 'openai'
  const headers = (request: AttemptRequest | SurfaceRequest) => withExtraHeaders({ 'content-type': 'application/json', authorization: `Bearer ${request.key.value}` }, init.network.extra_headers)
  return {
    name: init.name,
    type: init.type,
    send(request: AttemptRequest): Promise<AttemptResult> {
      const body = upstreamBody(request.body, upstreamModel(request))
      return sendOpenAiShaped(dispatcher, upstreamCall(target, headers(request), body, request), request.body.stream === true, now)
    },
    speaks: (surface: Surface) => surface === 'embeddings' || (surface === 'responses' && speaksResponses),
    sendNative(request: SurfaceRequest): Promise<AttemptResult> {
      const where = request.surface === 'embeddings' ? embeddingsTarget : responsesTarget
      const body = upstreamBody(request.body, upstreamModel(request))
      return sendOpenAiShaped(dispatcher, upstreamCall(where, headers(request), body, request), request.stream, now, 'responses')
    },
    close: () => dispatcher.close(),
  }
}
