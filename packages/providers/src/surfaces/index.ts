/**
 * The inference surfaces besides chat: Anthropic Messages (and count_tokens), OpenAI Responses,
 * embeddings. Sent natively when the adapter speaks the surface, else translated to chat, sent
 * with the adapter's `send`, and the answer translated back: every adapter serves every surface.
 */
import { unsupported } from '../anthropic/errors.ts'
import type { AttemptResult, ChatRequestBody, ProviderAdapter, Surface, SurfaceRequest } from '../types.ts'
import { messagesToChat } from './messages/request.ts'
import { chatToMessage } from './messages/response.ts'
import { chatStreamToMessageEvents } from './messages/stream.ts'
import { responsesTranslation } from './responses/request.ts'
import { chatToResponse } from './responses/response.ts'
import { chatStreamToResponseEvents } from './responses/stream.ts'
import { chatBodyOf } from './shared.ts'
import { normalizedEvents } from '../http/stream-failure.ts'
import { malformedSuccess, notSent, translating } from '../send.ts'

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

/** One attempt on a surface, its success in the surface's own format; a body that cannot be translated is `notSent`, never thrown. */
export async function sendSurface(adapter: ProviderAdapter, request: SurfaceRequest): Promise<AttemptResult> {
  if (speaksNatively(adapter, request.surface)) return adapter.sendNative!(request)
  const surface = request.surface
  if (surface !== 'messages' && surface !== 'responses') {
    return notSent(unsupported(`Provider "${adapter.name}" (${adapter.type}) does not serve ${surface === 'embeddings' ? 'embeddings' : 'token counting'}.`))
  }
  // What a translated attempt does not carry, in words: `anthropic-beta` means nothing to an upstream reached through chat.
  const beta = request.headers['anthropic-beta']
  const notes = beta === undefined || beta === '' ? [] : [`anthropic-beta (${beta}) not sent: ${adapter.name} is reached through the chat translation, and beta flags only mean something to Anthropic`]
  const translated = translating(() => (surface === 'messages' ? { chat: messagesToChat(request.body), notes: [] } : responsesTranslation(request.body)))
  if ('ok' in translated) return withNotes(translated, notes)
  notes.push(...translated.notes)
  return withNotes(await sendThroughChat(adapter, request, surface, translated.chat), notes)
}

/** Sends the translated body with the adapter's own `send`, and renders its answer in the surface's format. */
async function sendThroughChat(adapter: ProviderAdapter, request: SurfaceRequest, surface: 'messages' | 'responses', chat: ChatRequestBody): Promise<AttemptResult> {
  const result = await adapter.send({ body: chat, model: request.model, key: request.key, signal: request.signal, traceparent: request.traceparent })
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

function withNotes(result: AttemptResult, notes: readonly string[]): AttemptResult {
  if (notes.length > 0) result.notes = notes
  return result
}
