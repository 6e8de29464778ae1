/** The Azure OpenAI adapter: deployments per key, `api-version`, and the `api-key` header. */
import { createDispatcher, splitBaseUrl, withExtraHeaders } from '../http/transport.ts'
import { sendOpenAiShaped, upstreamBody, upstreamCall, upstreamModel } from '../send.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest } from '../types.ts'

/** The api-version used when a key does not name one (Azure OpenAI's GA version). */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21'

/** Deployment URLs kept per adapter; past this many (a config churning deployments) the cache starts over. */
const MAX_CACHED_TARGETS = 1024

/** Creates an adapter for Azure OpenAI resources. */
export function createAzureAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher(init.network)
  const targets = new Map<string, { origin: string; path: string }>()
  /** The key's resource and deployment for the request's model, and the headers it is called with. */
  const resolve = (request: AttemptRequest | SurfaceRequest) => {
    const config = request.key.azure_key_config ?? {}
    const model = upstreamModel(request)
    const deployment = config.deployments?.[request.model] ?? config.deployments?.[model] ?? model
    const headers = withExtraHeaders({ 'content-type': 'application/json', 'api-key': request.key.value }, init.network.extra_headers)
    return { endpoint: config.endpoint ?? init.network.base_url, model, deployment, apiVersion: config.api_version ?? DEFAULT_AZURE_API_VERSION, headers }
  }
  /** The deployment's `operation` URL with its api-version; parsing the endpoint costs more than the rest of the attempt's set-up, so once per target. */
  const deploymentTarget = (endpoint: string, deployment: string, apiVersion: string, operation: string) => {
    const targetKey = `${endpoint}\u0000${deployment}\u0000${apiVersion}\u0000${operation}`
    let target = targets.get(targetKey)
    if (target === undefined) {
      const base = splitBaseUrl(endpoint, `/openai/deployments/${encodeURIComponent(deployment)}/${operation}`)
      target = { origin: base.origin, path: `${base.path}${base.path.includes('?') ? '&' : '?'}api-version=${encodeURIComponent(apiVersion)}` }
      if (targets.size >= MAX_CACHED_TARGETS) targets.clear()
      targets.set(targetKey, target)
    }
    return target
  }
  return {
    name: init.name,
    type: 'azure',
    send(request: AttemptRequest): Promise<AttemptResult> {
      const { endpoint, model, deployment, apiVersion, headers } = resolve(request)
      const target = deploymentTarget(endpoint, deployment, apiVersion, 'chat/completions')
      return sendOpenAiShaped(dispatcher, upstreamCall(target, headers, upstreamBody(request.body, model), request), request.body.stream === true, now)
    },
    speaks: (surface: Surface) => surface === 'embeddings' || surface === 'responses',
    /**
     * Embeddings go to the deployment's `/embeddings` with the key's api-version; Responses to
     * the resource's v1 API (`/openai/v1/responses`), where `model` names the deployment.
     */
    sendNative(request: SurfaceRequest): Promise<AttemptResult> {
      const { endpoint, deployment, apiVersion, headers } = resolve(request)
      const where = request.surface === 'embeddings' ? deploymentTarget(endpoint, deployment, apiVersion, 'embeddings') : splitBaseUrl(endpoint, '/openai/v1/responses')
      return sendOpenAiShaped(dispatcher, upstreamCall(where, headers, upstreamBody(request.body, deployment), request), request.stream, now, 'responses')
    },
    close: () => dispatcher.close(),
  }
}
