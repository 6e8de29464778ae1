/**
 * The Amazon Bedrock adapter: chat.completions in, the Converse API on the wire
 * (`POST /model/{modelId}/converse`), chat.completions out. A key signs with SigV4 when its
 * `bedrock_key_config` has `access_key` and `secret_key`; otherwise its `value` is a Bedrock
 * API key sent as a bearer token.
 *
 * ConverseStream (AWS event-stream framing) is not built yet: a streaming request is answered
 * from one Converse call, as OpenAI chunks once the whole answer is in (correct content, finish
 * reason and usage; no token-by-token timing).
 */
import { createDispatcher, failureOf, postBuffered, splitBaseUrl, thrownFailure, withExtraHeaders } from '../http/transport.ts'
import { upstreamModel } from '../body.ts'
import type { AttemptRequest, AttemptResult, BedrockKeyConfig, ProviderAdapter, ProviderInit, ProviderKey } from '../types.ts'
import { fromConverseResponse, toConverseRequest } from './converse.ts'
import { signedHeaders } from './sign.ts'
import { isCallerTranslationError, jsonBody, malformedSuccess, notSent, streamOf } from '../outcome.ts'

/** The region used when a key names none. */
export const DEFAULT_BEDROCK_REGION = 'us-east-1'

/** Bedrock runtime's public endpoint for a region. */
export function bedrockRuntimeUrl(region: string): string {
  return `https://bedrock-runtime.${region}.amazonaws.com`
}

/** The model id (or inference-profile ARN) a key's deployments give a model; else the model name itself. */
export function bedrockModelId(key: ProviderKey, requested: string, upstream: string): string {
  const deployments = key.bedrock_key_config?.deployments
  return deployments?.[requested] ?? deployments?.[upstream] ?? upstream
}

/** Creates an adapter for Amazon Bedrock's runtime (Converse). */
export function createBedrockAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher()
  let responseIds = 0
  return {
    name: init.name,
    type: 'bedrock',
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const config: BedrockKeyConfig = request.key.bedrock_key_config ?? { region: DEFAULT_BEDROCK_REGION }
      const model = upstreamModel(request)
      const modelId = bedrockModelId(request.key, request.model, model)
      const stream = request.body.stream === true
      let body: string
      try {
        body = JSON.stringify(toConverseRequest(request.body, modelId))
      } catch (error) {
        // A body Bedrock cannot be sent faithfully: the caller's 400, before any attempt.
        if (isCallerTranslationError(error)) return notSent(error)
        throw error
      }
      const base = init.network.base_url === '' ? bedrockRuntimeUrl(config.region) : init.network.base_url
      const target = splitBaseUrl(base, `/model/${encodeURIComponent(modelId)}/converse`)
      const own: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' }
      let headers: Record<string, string>
      if (config.access_key !== undefined && config.secret_key !== undefined) {
        const credentials = { ...config, access_key: config.access_key, secret_key: config.secret_key }
        headers = await signedHeaders(credentials, target.origin, target.path, own, body, new Date(now()))
      } else {
        headers = { ...own, authorization: `Bearer ${request.key.value}` }
      }
      let response
      try {
        response = await postBuffered(dispatcher, { origin: target.origin, path: target.path, headers: withExtraHeaders(headers, init.network.extra_headers), body, signal: request.signal })
      } catch (error) {
        return thrownFailure(error)
      }
      const text = response.body.toString('utf8')
      if (response.statusCode < 200 || response.statusCode >= 300) return failureOf(response.statusCode, response.headers, text, now)
      const createdSeconds = Math.floor(now() / 1000)
      let answer: unknown
      try {
        answer = JSON.parse(text)
      } catch {
        return malformedSuccess(response.statusCode, response.headers, 'a body that is not JSON')
      }
      try {
        const id = `chatcmpl-bedrock-${createdSeconds.toString(36)}-${(responseIds++).toString(36)}`
        const completion = fromConverseResponse(answer, request.model, createdSeconds, id)
        if (!stream) return jsonBody(response.statusCode, response.headers, completion, now())
        const options = request.body.stream_options as { include_usage?: unknown } | undefined
        return streamOf(response.statusCode, response.headers, chunksOf(completion, options?.include_usage === true), now())
      } catch (error) {
        return malformedSuccess(response.statusCode, response.headers, error instanceof Error ? error.message : 'a body that is not a Converse response')
      }
    },
    close: () => dispatcher.close(),
  }
}

/** A whole chat.completion as OpenAI stream chunks: the message, the finish reason, and the usage chunk when asked for. */
async function* chunksOf(completion: Record<string, unknown>, includeUsage: boolean): AsyncGenerator<string> {
  const choice = (completion.choices as Array<{ message: { content: string | null; tool_calls?: unknown[] }; finish_reason: string }>)[0]!
  const head = { id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model }
  const delta: Record<string, unknown> = { role: 'assistant', content: choice.message.content ?? '' }
  if (choice.message.tool_calls !== undefined) {
    delta.tool_calls = choice.message.tool_calls.map((call, index) => ({ index, ...(call as Record<string, unknown>) }))
  }
  yield JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: null }] })
  yield JSON.stringify({ ...head, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: choice.finish_reason }] })
  if (includeUsage) yield JSON.stringify({ ...head, choices: [], usage: completion.usage })
}
