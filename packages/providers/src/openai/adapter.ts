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
    const text = await response.body.text()
    if (!looksLikeJsonObject(text)) {
      return { ok: false, failure: { failureClass: 'unknown', scope: 'model', status: response.statusCode, waitHintMs: null, message: `The upstream answered ${response.statusCode} with a body that is not a JSON object`, code: null }, headers }
    }
    return { ok: true, kind: 'json', status: response.statusCode, headers, text }
  } catch (error) {
    return thrownFailure(error)
  }
}

/** A cheap shape check: the gateway splices `extra_fields` into the text instead of parsing it. */
function looksLikeJsonObject(text: string): boolean {
  const start = text.search(/\S/)
  return start >= 0 && text[start] === '{' && text.trimEnd().endsWith('}')
}
