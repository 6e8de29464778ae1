/**
 * What every adapter's `send` shares: the upstream's model name and body, the two ways an answer
 * is read (OpenAI-shaped, passed through as it came, or translated into chat), and the one
 * normalized outcome they build for every adapter alike: a success with its usage and the key's
 * rate-limit state, a failure, a body never sent (`notSent`).
 */
import type { Dispatcher } from 'undici'
import { TranslationError } from './anthropic/errors.ts'
import { asRequested } from './http/chunks.ts'
import { OpenAiChunkQueue } from './http/openai-stream.ts'
import { readRateLimitExhaustion } from './http/rate-limit.ts'
import { normalizedEvents } from './http/stream-failure.ts'
import { attemptFailure, networkFailure } from './errors/classify.ts'
import { failureOf, postBuffered, postStreaming, ReadableSink, type StreamSink, type UpstreamRequest } from './http/transport.ts'
import type { StreamFormat } from './streams/content.ts'
import type { AttemptFailed, AttemptRequest, AttemptResult, ChatRequestBody, StreamSuccess } from './types.ts'
import { readUsage, usageOf } from './usage.ts'

/** The model name the key's upstream knows: the key's alias for the requested model, else the model itself. */
export function upstreamModel(request: Pick<AttemptRequest, 'key' | 'model'>): string {
  return request.key.aliases?.[request.model] ?? request.model
}

/** The caller's body serialized with the upstream's model name, set in place (the body is the engine's own copy). */
export function upstreamBody(body: { model?: unknown }, model: string): string {
  body.model = model
  return JSON.stringify(body)
}

/** The call to `target` with `headers` and `body`, on the attempt's signal and trace context. */
export function upstreamCall(target: { origin: string; path: string }, headers: Record<string, string>, body: string, attempt: Pick<AttemptRequest, 'signal' | 'traceparent'>): UpstreamRequest {
  return { origin: target.origin, path: target.path, headers, body, signal: attempt.signal, traceparent: attempt.traceparent }
}

/** Builds what a translating adapter sends; a body its provider cannot be sent faithfully is the caller's 400, before any attempt. */
export function translating<T>(build: () => T): T | AttemptFailed {
  try {
    return build()
  } catch (error) {
    // The caller's body (not the upstream's answer, `upstream_malformed`) cannot be said.
    if (error instanceof TranslationError && error.code !== 'upstream_malformed') return notSent(error)
    throw error
  }
}

/** A body that cannot be said in this provider's format (or a surface it does not serve): the caller's 400, no attempt. */
export function notSent(error: TranslationError): AttemptFailed {
  return { ok: false, notSent: true, failure: attemptFailure('caller_fault', 400, error.message, error.code), headers: {} }
}

/** A 2xx whose body cannot be read: `unknown` for every adapter alike (not the key's fault, not the caller's). */
export function malformedSuccess(status: number, headers: Record<string, string>, what: string): AttemptFailed {
  return { ok: false, failure: attemptFailure('unknown', status, `The upstream answered ${status} with ${what}`, 'upstream_malformed'), headers }
}

/** Sends a request whose 2xx body streams into `sink`; `events`, read from it, must reject with a StreamFailure when it breaks (see `normalizedEvents`). */
async function sendStreaming(dispatcher: Dispatcher, call: UpstreamRequest, sink: StreamSink, events: AsyncIterable<string>, now: () => number): Promise<AttemptResult> {
  const response = await posted(postStreaming(dispatcher, call, sink))
  if ('ok' in response) return response
  const { statusCode, headers, body } = response
  if (body !== null) return failureOf(statusCode, headers, body.toString('utf8'), now)
  return { ok: true, kind: 'stream', status: statusCode, headers, events, rateLimit: readRateLimitExhaustion(headers, now()) }
}

/** Sends a request whose answer is OpenAI-shaped: OpenAI and Azure, and Anthropic's own framing (JSON, SSE data lines). */
export async function sendOpenAiShaped(dispatcher: Dispatcher, call: UpstreamRequest, stream: boolean, now: () => number, ending: StreamFormat = 'chat'): Promise<AttemptResult> {
  if (stream) {
    const chunks = new OpenAiChunkQueue(ending)
    return sendStreaming(dispatcher, call, chunks, chunks, now)
  }
  const response = await posted(postBuffered(dispatcher, call))
  if ('ok' in response) return response
  const { statusCode, headers, body } = response
  if (statusCode < 200 || statusCode >= 300) return failureOf(statusCode, headers, body.toString('utf8'), now)
  if (!looksLikeJsonObject(body)) return malformedSuccess(statusCode, headers, 'a body that is not a JSON object')
  return { ok: true, kind: 'json', status: statusCode, headers, bytes: body, usage: readUsage(body), rateLimit: readRateLimitExhaustion(headers, now()) }
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

/** How a translating adapter reads its provider's answers into chat. */
export interface Translation {
  /** A 2xx stream's body -> chat chunk texts (with the usage chunk; dropped here unless asked for); read lazily. */
  stream(body: AsyncIterable<Uint8Array>): AsyncIterable<string>
  /** A 2xx JSON answer -> a chat completion; throws an Error saying why when it is not the provider's answer. */
  json(parsed: unknown): Record<string, unknown>
}

/** Sends a request to a provider whose answers are translated into chat (Anthropic, Bedrock, Google). */
export async function sendTranslated(dispatcher: Dispatcher, call: UpstreamRequest, body: ChatRequestBody, now: () => number, translation: Translation): Promise<AttemptResult> {
  if (body.stream === true) {
    // The translation's generators read nothing until the events are read: after a 2xx's headers.
    const sink = new ReadableSink()
    return sendStreaming(dispatcher, call, sink, normalizedEvents(asRequested(translation.stream(sink.body), body.stream_options)), now)
  }
  const response = await posted(postBuffered(dispatcher, call))
  if ('ok' in response) return response
  // A body not JSON, or refused by `translation.json`, is a malformed success.
  const { statusCode, headers } = response
  const text = response.body.toString('utf8')
  if (statusCode < 200 || statusCode >= 300) return failureOf(statusCode, headers, text, now)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
    const answer = translation.json(parsed)
    return { ok: true, kind: 'json', status: statusCode, headers, body: answer, usage: usageOf(answer.usage), rateLimit: readRateLimitExhaustion(headers, now()) }
  } catch (error) {
    // `parsed` is still undefined when the text was not JSON (JSON.parse never returns undefined).
    return malformedSuccess(statusCode, headers, parsed === undefined ? 'a body that is not JSON' : error instanceof Error ? error.message : String(error))
  }
}

/** The upstream's answer, or the failed attempt a thrown network error (or abort) is (the engine tells timeouts and cancels apart itself). */
async function posted<T extends object>(sending: Promise<T>): Promise<T | AttemptFailed> {
  try {
    return await sending
  } catch (error) {
    return { ok: false, failure: networkFailure(error), headers: {} }
  }
}
