/**
 * The inference surfaces besides chat completions: Anthropic Messages (and count_tokens),
 * OpenAI Responses, embeddings. One attempt on a surface goes to the upstream natively when
 * its adapter speaks it; otherwise it is translated to chat completions (the internal
 * representation every adapter speaks), sent with the adapter's own `send`, and its answer
 * translated back: JSON bodies and streams alike. So an adapter added later (Bedrock,
 * Vertex) serves every surface once it serves chat.
 */
import { TranslationError } from '../anthropic/errors.ts'
import type { AttemptResult, ProviderAdapter, Surface, SurfaceRequest } from '../types.ts'
import { messagesToChat } from './messages/request.ts'
import { chatToMessage } from './messages/response.ts'
import { chatStreamToMessageEvents } from './messages/stream.ts'
import { responsesToChat } from './responses/request.ts'
import { chatToResponse } from './responses/response.ts'
import { chatStreamToResponseEvents } from './responses/stream.ts'
import { chatBodyOf } from './shared.ts'
import { isCallerTranslationError, malformedSuccess, normalizedEvents, notSent } from '../outcome.ts'

export { estimateInputTokens } from './count.ts'

/** True when the adapter can serve the surface: natively, or translated through chat. */
export function canServe(adapter: ProviderAdapter, surface: Surface): boolean {
  if (adapter.speaks?.(surface) === true) return true
  // Embeddings and token counts are not chat: there is nothing to translate them into.
  return surface === 'messages' || surface === 'responses'
}

/** True when the adapter sends the surface as it is (no translation). */
export function speaksNatively(adapter: ProviderAdapter, surface: Surface): boolean {
  return adapter.speaks?.(surface) === true && adapter.sendNative !== undefined
}

/**
 * One attempt on a surface. A success is in the surface's own format: JSON (bytes passed
 * through, or a body we built) or a stream yielding each event's JSON `data` (its `type`
 * names the event). Failures are the adapter's, classified as for chat; a body that cannot be
 * translated (or a surface the provider cannot serve) is `notSent`, never thrown.
 */
export async function sendSurface(adapter: ProviderAdapter, request: SurfaceRequest): Promise<AttemptResult> {
  if (speaksNatively(adapter, request.surface)) return adapter.sendNative!(request)
  const surface = request.surface
  if (surface !== 'messages' && surface !== 'responses') {
    return notSent(new TranslationError('translation_unsupported', `Provider "${adapter.name}" (${adapter.type}) does not serve ${surface === 'embeddings' ? 'embeddings' : 'token counting'}.`))
  }
  let chat
  try {
    chat = surface === 'messages' ? messagesToChat(request.body) : responsesToChat(request.body)
  } catch (error) {
    if (isCallerTranslationError(error)) return notSent(error)
    throw error
  }
  const result = await adapter.send({ body: chat, model: request.model, key: request.key, signal: request.signal })
  if (!result.ok) return result
  if (result.kind === 'stream') {
    const events = surface === 'messages' ? chatStreamToMessageEvents(result.events, request.model) : chatStreamToResponseEvents(result.events, request.model, request.body)
    return { ok: true, kind: 'stream', status: result.status, headers: result.headers, rateLimit: result.rateLimit, events: normalizedEvents(events) }
  }
  let chatBody
  try {
    chatBody = chatBodyOf(result)
  } catch {
    return malformedSuccess(result.status, result.headers, 'a body that is not JSON')
  }
  const body = surface === 'messages' ? chatToMessage(chatBody, request.model) : chatToResponse(chatBody, request.model, request.body)
  // The chat answer's token counts and rate-limit state are the attempt's, whatever format it is rendered in.
  return { ok: true, kind: 'json', status: result.status, headers: result.headers, usage: result.usage, rateLimit: result.rateLimit, body }
}
