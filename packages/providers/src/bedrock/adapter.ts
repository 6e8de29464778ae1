/**
 * The Amazon Bedrock adapter: chat.completions in, the Converse API on the wire (`converse`, or
 * `converse-stream` in AWS event-stream framing), chat.completions out. A key signs with SigV4
 * when it has `access_key` and `secret_key`, else its `value` is a Bedrock API key (bearer).
 */
import { createDispatcher, splitBaseUrl, withExtraHeaders } from '../http/transport.ts'
import { sendTranslated, translating, upstreamCall, upstreamModel } from '../send.ts'
import type { AttemptRequest, AttemptResult, BedrockKeyConfig, ProviderAdapter, ProviderInit } from '../types.ts'
import { fromConverseResponse, toConverseRequest } from './converse.ts'
import { readEventStream } from './eventstream.ts'
import { signedHeaders } from './sign.ts'
import { converseStreamToOpenAI } from './stream.ts'

/** The region used when a key names none. */
export const DEFAULT_BEDROCK_REGION = 'us-east-1'

/** Creates an adapter for Amazon Bedrock's runtime (Converse). */
export function createBedrockAdapter(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  const dispatcher = createDispatcher(init.network)
  let responseIds = 0
  return {
    name: init.name,
    type: 'bedrock',
    // Claude on Bedrock continues from a prefilled assistant turn, through Converse as natively.
    continues: (model: string) => /claude/i.test(model),
    async send(request: AttemptRequest): Promise<AttemptResult> {
      const config: BedrockKeyConfig = request.key.bedrock_key_config ?? { region: DEFAULT_BEDROCK_REGION }
      // The model id (or inference-profile ARN) the key's deployments give the model, else its upstream name.
      const upstream = upstreamModel(request)
      const modelId = config.deployments?.[request.model] ?? config.deployments?.[upstream] ?? upstream
      const stream = request.body.stream === true
      const body = translating(() => JSON.stringify(toConverseRequest(request.body, modelId)))
      if (typeof body !== 'string') return body
      // Bedrock runtime's public endpoint for the key's region, unless base_url names another.
      const base = init.network.base_url === '' ? `https://bedrock-runtime.${config.region}.amazonaws.com` : init.network.base_url
      const target = splitBaseUrl(base, `/model/${encodeURIComponent(modelId)}/${stream ? 'converse-stream' : 'converse'}`)
      const own: Record<string, string> = { 'content-type': 'application/json', accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' }
      const headers = config.access_key !== undefined && config.secret_key !== undefined
        ? await signedHeaders({ ...config, access_key: config.access_key, secret_key: config.secret_key }, target.origin, target.path, own, body, new Date(now()))
        : { ...own, authorization: `Bearer ${request.key.value}` }
      const createdSeconds = Math.floor(now() / 1000)
      const id = `chatcmpl-bedrock-${createdSeconds.toString(36)}-${(responseIds++).toString(36)}`
      return sendTranslated(dispatcher, upstreamCall(target, withExtraHeaders(headers, init.network.extra_headers), body, request), request.body, now, {
        stream: (events) => converseStreamToOpenAI(readEventStream(events), { id, model: request.model, createdSeconds }),
        json: (answer) => fromConverseResponse(answer, request.model, createdSeconds, id),
      })
    },
    close: () => dispatcher.close(),
  }
}
