/**
 * The OpenAI adapter, also used for every OpenAI-compatible upstream (groq, mistral,
 * together, vLLM) through `custom_provider_config.base_provider_type: "openai"`.
 */
import type { Agent } from 'undici'
import { createDispatcher, flattenHeaders, post, readFailure, splitBaseUrl, thrownFailure } from '../http/transport.ts'
import { openAiEvents } from '../http/openai-stream.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit } from '../types.ts'
import { upstreamBody, upstreamModel } from '../body.ts'

/** Creates an adapter for an upstream speaking OpenAI's chat.completions. */
export function createOpenAiAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher: Agent = createDispatcher()
  const target = splitBaseUrl(init.network.base_url, '/v1/chat/completions')
  return {
    name: init.name,
    type: init.type,
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const headers: Record<string, string> = {
        ...init.network.extra_headers,
        'content-type': 'application/json',
        authorization: `Bearer ${request.key.value}`,
      }
      return sendOpenAiShaped(dispatcher, { ...target, headers, body: upstreamBody(request.body, upstreamModel(request)), signal: request.signal }, request.body.stream === true, now)
    },
    close: () => dispatcher.close(),
  }
}

/** Sends a request whose answer is OpenAI-shaped (OpenAI and Azure share it). */
export async function sendOpenAiShaped(
  dispatcher: Agent,
  call: Parameters<typeof post>[1],
  stream: boolean,
  now: () => number,
): Promise<AttemptResult> {
  let response
  try {
    response = await post(dispatcher, call)
  } catch (error) {
    return thrownFailure(error)
  }
  if (response.statusCode < 200 || response.statusCode >= 300) return readFailure(response, now)
  const headers = flattenHeaders(response.headers)
  if (stream) return { ok: true, kind: 'stream', status: response.statusCode, headers, events: openAiEvents(response.body) }
  try {
    const body = (await response.body.json()) as Record<string, unknown>
    return { ok: true, kind: 'json', status: response.statusCode, headers, body }
  } catch (error) {
    return thrownFailure(error)
  }
}
