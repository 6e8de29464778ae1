/** Anthropic's `POST /v1/messages/count_tokens`: the Messages body without `max_tokens`, answered `{input_tokens}`. */
import { withBody, type Dialect } from '../dialects/dialect.ts'
import { estimateTokens, promptCharacters } from '../reply/content.ts'
import { anthropicDialect } from './dialect.ts'

/** Token counting at Anthropic: same keys, version header, faults and rate limits as Messages. */
export const anthropicCountDialect: Dialect = {
  ...anthropicDialect,
  parse(body, deployment, apiVersion, requestId) {
    // Validated as a Messages body, except that max_tokens is not asked for.
    const parsed = anthropicDialect.parse({ max_tokens: 1, ...body, stream: false }, deployment, apiVersion, requestId)
    if ('status' in parsed) return parsed
    const tools = Array.isArray(body.tools) ? JSON.stringify(body.tools).length : 0
    return { ...parsed, promptTokens: estimateTokens(promptCharacters(body.messages, body.system) + tools) }
  },
  complete(request, reply, context) {
    return withBody(anthropicDialect.complete(request, reply, context), JSON.stringify({ input_tokens: request.promptTokens }))
  },
}
