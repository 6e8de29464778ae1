/** The Azure OpenAI adapter: deployments per key, `api-version`, and the `api-key` header. */
import { createDispatcher, splitBaseUrl } from '../http/transport.ts'
import { sendOpenAiShaped } from '../openai/adapter.ts'
import { upstreamBody, upstreamModel } from '../body.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit } from '../types.ts'

/** The api-version used when a key does not name one (Azure OpenAI's GA version). */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21'

/** Creates an adapter for Azure OpenAI resources. */
export function createAzureAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher()
  return {
    name: init.name,
    type: 'azure',
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const config = request.key.azure_key_config ?? {}
      const model = upstreamModel(request)
      const deployment = config.deployments?.[request.model] ?? config.deployments?.[model] ?? model
      const apiVersion = encodeURIComponent(config.api_version ?? DEFAULT_AZURE_API_VERSION)
      const base = splitBaseUrl(config.endpoint ?? init.network.base_url, `/openai/deployments/${encodeURIComponent(deployment)}/chat/completions`)
      const separator = base.path.includes('?') ? '&' : '?'
      const headers: Record<string, string> = {
        ...init.network.extra_headers,
        'content-type': 'application/json',
        'api-key': request.key.value,
      }
      return sendOpenAiShaped(
        dispatcher,
        { origin: base.origin, path: `${base.path}${separator}api-version=${apiVersion}`, headers, body: upstreamBody(request.body, model), signal: request.signal },
        request.body.stream === true,
        now,
      )
    },
    close: () => dispatcher.close(),
  }
}
