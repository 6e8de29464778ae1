/** The Azure OpenAI adapter: deployments per key, `api-version`, and the `api-key` header. */
import { connectTimeoutOf, createDispatcher, splitBaseUrl, withExtraHeaders } from '../http/transport.ts'
import { sendOpenAiShaped } from '../openai/adapter.ts'
import { upstreamBody, upstreamModel } from '../body.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest } from '../types.ts'

/** The api-version used when a key does not name one (Azure OpenAI's GA version). */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21'

/** Deployment URLs kept per adapter; past this many (a config churning deployments) the cache starts over. */
const MAX_CACHED_TARGETS = 1024

/** Creates an adapter for Azure OpenAI resources. */
export function createAzureAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher(connectTimeoutOf(init.network))
  const targets = new Map<string, { origin: string; path: string }>()
  return {
    name: init.name,
    type: 'azure',
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const config = request.key.azure_key_config ?? {}
      const model = upstreamModel(request)
      const deployment = config.deployments?.[request.model] ?? config.deployments?.[model] ?? model
      const endpoint = config.endpoint ?? init.network.base_url
      const apiVersion = config.api_version ?? DEFAULT_AZURE_API_VERSION
      // Parsing the endpoint URL costs more than the rest of the attempt's set-up: once per target.
      const targetKey = `${endpoint}\u0000${deployment}\u0000${apiVersion}`
      let target = targets.get(targetKey)
      if (target === undefined) {
        const base = splitBaseUrl(endpoint, `/openai/deployments/${encodeURIComponent(deployment)}/chat/completions`)
        target = { origin: base.origin, path: `${base.path}${base.path.includes('?') ? '&' : '?'}api-version=${encodeURIComponent(apiVersion)}` }
        if (targets.size >= MAX_CACHED_TARGETS) targets.clear()
        targets.set(targetKey, target)
      }
      const headers = withExtraHeaders({ 'content-type': 'application/json', 'api-key': request.key.value }, init.network.extra_headers)
      return sendOpenAiShaped(
        dispatcher,
        { origin: target.origin, path: target.path, headers, body: upstreamBody(request.body, model), signal: request.signal, traceparent: request.traceparent },
        request.body.stream === true,
        now,
      )
    },
    speaks: (surface: Surface) => surface === 'embeddings' || surface === 'responses',
    /**
     * Embeddings go to the deployment's `/embeddings` with the key's api-version; Responses to
     * the resource's v1 API (`/openai/v1/responses`), where `model` names the deployment.
     */
    sendNative(request: SurfaceRequest): Promise<AttemptResult> {
      const config = request.key.azure_key_config ?? {}
      const model = upstreamModel(request)
      const deployment = config.deployments?.[request.model] ?? config.deployments?.[model] ?? model
      const endpoint = config.endpoint ?? init.network.base_url
      let where
      if (request.surface === 'embeddings') {
        const base = splitBaseUrl(endpoint, `/openai/deployments/${encodeURIComponent(deployment)}/embeddings`)
        where = { origin: base.origin, path: `${base.path}${base.path.includes('?') ? '&' : '?'}api-version=${encodeURIComponent(config.api_version ?? DEFAULT_AZURE_API_VERSION)}` }
      } else {
        where = splitBaseUrl(endpoint, '/openai/v1/responses')
      }
      request.body.model = deployment
      const headers = withExtraHeaders({ 'content-type': 'application/json', 'api-key': request.key.value }, init.network.extra_headers)
      return sendOpenAiShaped(dispatcher, { origin: where.origin, path: where.path, headers, body: JSON.stringify(request.body), signal: request.signal, traceparent: request.traceparent }, request.stream, now, 'responses')
    },
    close: () => dispatcher.close(),
  }
}
