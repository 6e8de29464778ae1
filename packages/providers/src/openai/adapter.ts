/**
 * The OpenAI adapter, also used for every OpenAI-compatible upstream (groq, mistral,
 * together, vLLM) through `custom_provider_config.base_provider_type: "openai"`.
 */
import type { Agent } from 'undici'
import { connectTimeoutOf, createDispatcher, failureOf, postBuffered, postStreaming, splitBaseUrl, thrownFailure, withExtraHeaders, type UpstreamRequest } from '../http/transport.ts'
import { OpenAiChunkQueue } from '../http/openai-stream.ts'
import type { StreamFormat } from '../streams/content.ts'
import type { AttemptRequest, AttemptResult, ProviderAdapter, ProviderInit, Surface, SurfaceRequest } from '../types.ts'
import { upstreamBody, upstreamModel } from '../body.ts'
import { jsonBytes, malformedSuccess, streamOf } from '../outcome.ts'

/** Creates an adapter for an upstream speaking OpenAI's chat.completions. */
export function createOpenAiAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher: Agent = createDispatcher(connectTimeoutOf(init.network))
  const target = splitBaseUrl(init.network.base_url, '/v1/chat/completions')
  const responsesTarget = splitBaseUrl(init.network.base_url, '/v1/responses')
  const embeddingsTarget = splitBaseUrl(init.network.base_url, '/v1/embeddings')
  // OpenAI itself has the Responses API; an OpenAI-compatible upstream (groq, vLLM, ...) is taken to speak chat only.
  const speaksResponses = init.name === 'openai'
  return {
    name: init.name,
    type: init.type,
    send(request: AttemptRequest): Promise<AttemptResult> {
      const headers = withExtraHeaders({ 'content-type': 'application/json', authorization: `Bearer ${request.key.value}` }, init.network.extra_headers)
      const body = upstreamBody(request.body, upstreamModel(request))
      return sendOpenAiShaped(dispatcher, { origin: target.origin, path: target.path, headers, body, signal: request.signal, traceparent: request.traceparent }, request.body.stream === true, now)
    },
    speaks: (surface: Surface) => surface === 'embeddings' || (surface === 'responses' && speaksResponses),
    sendNative(request: SurfaceRequest): Promise<AttemptResult> {
      const where = request.surface === 'embeddings' ? embeddingsTarget : responsesTarget
      const headers = withExtraHeaders({ 'content-type': 'application/json', authorization: `Bearer ${request.key.value}` }, init.network.extra_headers)
      request.body.model = upstreamModel(request)
      return sendOpenAiShaped(dispatcher, { origin: where.origin, path: where.path, headers, body: JSON.stringify(request.body), signal: request.signal, traceparent: request.traceparent }, request.stream, now, 'responses')
    },
    close: () => dispatcher.close(),
  }
}

/** Sends a request whose answer is OpenAI-shaped (OpenAI and Azure share it). */
export async function sendOpenAiShaped(
  dispatcher: Agent,
  call: UpstreamRequest,
  stream: boolean,
  now: () => number,
  ending: StreamFormat = 'chat',
): Promise<AttemptResult> {
  if (stream) {
    const chunks = new OpenAiChunkQueue(ending)
    let response
    try {
      response = await postStreaming(dispatcher, call, chunks)
    } catch (error) {
      return thrownFailure(error)
    }
    if (response.body !== null) return failureOf(response.statusCode, response.headers, response.body.toString('utf8'), now)
    return streamOf(response.statusCode, response.headers, chunks, now())
  }
  let response
  try {
    response = await postBuffered(dispatcher, call)
  } catch (error) {
    return thrownFailure(error)
  }
  const { statusCode, headers, body } = response
  if (statusCode < 200 || statusCode >= 300) return failureOf(statusCode, headers, body.toString('utf8'), now)
  if (!looksLikeJsonObject(body)) return malformedSuccess(statusCode, headers, 'a body that is not a JSON object')
  return jsonBytes(statusCode, headers, body, now())
}

/** A cheap shape check: the gateway splices `extra_fields` into the bytes instead of parsing them. */
function looksLikeJsonObject(bytes: Buffer): boolean {
  let first = 0
  while (first < bytes.length && isSpace(bytes[first]!)) first++
  let last = bytes.length - 1
  while (last > first && isSpace(bytes[last]!)) last--
  return bytes[first] === 0x7b && bytes[last] === 0x7d
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09
}
