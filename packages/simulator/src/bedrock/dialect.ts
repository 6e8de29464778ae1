/**
 * Amazon Bedrock's Converse and ConverseStream APIs (`POST /model/{modelId}/converse` and
 * `/converse-stream`): SigV4 verified against the simulator's key pair (sigv4.ts) or a Bedrock
 * API key as a bearer token, Converse bodies, streams in AWS event-stream framing
 * (eventstream.ts), and errors typed in `x-amzn-errortype`.
 */
import { jsonAnswer, type Answer, type Dialect } from '../dialects/dialect.ts'
import { bearerKey } from '../openai/dialect.ts'
import { converseBody, converseStreamFrames, parseConverseBody } from './body.ts'
import { eventFrame } from './eventstream.ts'
import { bedrockError, bedrockFault } from './errors.ts'
import { readSigV4, verifySigV4 } from './sigv4.ts'

function answer(error: Answer, requestId: string): Answer {
  return jsonAnswer(error.status, ['x-amzn-requestid', requestId, ...error.headers], error.body)
}

function streamHeaders(requestId: string): string[] {
  return ['x-amzn-requestid', requestId, 'content-type', 'application/vnd.amazon.eventstream']
}

/** Converse (or, `stream`, ConverseStream). The key a request is recorded and matched by is its access key id (or its API key). */
function converseDialect(stream: boolean): Dialect {
  return {
    provider: 'bedrock',
    readKey: (headers) => readSigV4(headers)?.accessKeyId ?? bearerKey(headers),
    missingKey: (requestId) => answer(bedrockError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token'), requestId),
    authenticate(request, body, requestId) {
      const sigv4 = readSigV4(request.headers)
      // A bearer token is a Bedrock API key: any is accepted (faults per key are scripted with rules).
      if (sigv4 === undefined) return undefined
      if (sigv4.service !== 'bedrock') {
        return answer(bedrockError(403, 'InvalidSignatureException', `Credential should be scoped to correct service: 'bedrock'.`), requestId)
      }
      const verdict = verifySigV4(request.method ?? 'POST', request.url ?? '/', request.headers, body, sigv4, Date.now())
      if (verdict === undefined) return undefined
      return answer(bedrockError(verdict.kind === 'malformed' ? 400 : 403, verdict.kind === 'malformed' ? 'IncompleteSignatureException' : 'InvalidSignatureException', verdict.message), requestId)
    },
    invalidJson: (requestId) => answer(bedrockError(400, 'ValidationException', 'Malformed input request, please reformat your input and try again.'), requestId),
    parse(body, modelId, _apiVersion, requestId) {
      const parsed = parseConverseBody(body, modelId ?? '', stream)
      return 'refusal' in parsed ? answer(bedrockError(400, 'ValidationException', parsed.refusal), requestId) : parsed
    },
    complete: (chat, reply, context) => jsonAnswer(200, ['x-amzn-requestid', context.requestId], converseBody(chat, reply, context.ids.next('tooluse_'), 1)),
    stream: (chat, reply, context) => ({ headers: streamHeaders(context.requestId), chunks: converseStreamFrames(chat, reply, context.ids.next('tooluse_')) }),
    streamError(chat, reply, context, message) {
      // Half the answer, then the exception frame Bedrock sends when the model fails mid-stream; the connection then ends.
      const all = converseStreamFrames(chat, reply, context.ids.next('tooluse_'))
      const frames = all.slice(0, Math.max(2, Math.floor(all.length / 2)))
      frames.push(eventFrame('modelStreamErrorException', { message: message ?? 'The model encountered an error while streaming the response. Try your request again.' }, 'exception'))
      return { headers: streamHeaders(context.requestId), chunks: frames }
    },
    fault: (preset, context) => answer(bedrockFault(preset, context), context.requestId),
    rateLimited: (_decision, context) => answer(bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.'), context.requestId),
  }
}

/** Bedrock's Converse dialect. */
export const bedrockDialect = converseDialect(false)

/** ConverseStream: the same dialect, its answers streamed. */
export const bedrockStreamDialect = converseDialect(true)
