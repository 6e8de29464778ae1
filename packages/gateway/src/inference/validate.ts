/**
 * Checks a chat.completions body before any upstream sees it. Hand-written rather than a
 * schema library: it runs on every request, and each message says what to fix.
 */
import type { ChatRequestBody } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import type { SurfaceCall } from './attempt.ts'

/** A validated request: the upstream body (without gateway-only fields) and the gateway's own fields. */
export interface ChatRequest {
  body: ChatRequestBody
  model: string
  fallbacks: string[]
  stream: boolean
  /** Set on the other surfaces: each attempt sends this instead of `body` (inference/attempt.ts). */
  surface?: SurfaceCall
}

const fail = (message: string, param: string): never => {
  throw new GatewayError('invalid_request', message, { param })
}

/** Validates a parsed JSON body; throws GatewayError('invalid_request') naming the field. */
export function validateChatRequest(json: unknown): ChatRequest {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return fail('The request body must be a JSON object with "model" and "messages".', '')
  }
  const input = json as Record<string, unknown>
  const model = input.model
  if (typeof model !== 'string' || model.trim() === '') {
    fail(model === undefined ? '"model" is required: name a model, e.g. "openai/gpt-4o-mini" or "gpt-4o-mini".' : '"model" must be a non-empty string.', 'model')
  }
  const messages = input.messages
  if (!Array.isArray(messages) || messages.length === 0) {
    fail(messages === undefined ? '"messages" is required: an array of {role, content} objects.' : '"messages" must be a non-empty array of {role, content} objects.', 'messages')
  }
  for (let index = 0; index < (messages as unknown[]).length; index++) {
    const message = (messages as unknown[])[index]
    if (message === null || typeof message !== 'object' || Array.isArray(message)) fail(`messages[${index}] must be an object with "role" and "content".`, `messages[${index}]`)
    const role = (message as Record<string, unknown>).role
    if (typeof role !== 'string' || role === '') fail(`messages[${index}].role must be a string such as "system", "user", "assistant" or "tool".`, `messages[${index}].role`)
  }
  const stream = input.stream
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') fail('"stream" must be true or false.', 'stream')
  const fallbacks = input.fallbacks
  if (fallbacks !== undefined && fallbacks !== null) {
    if (!Array.isArray(fallbacks)) fail('"fallbacks" must be an array of "provider/model" strings.', 'fallbacks')
    ;(fallbacks as unknown[]).forEach((fallback, index) => {
      if (typeof fallback !== 'string' || !/^[^/\s]+\/\S+$/.test(fallback)) {
        fail(`fallbacks[${index}] must be a "provider/model" string, e.g. "anthropic/claude-3-5-haiku-latest".`, `fallbacks[${index}]`)
      }
    })
  }
  for (const field of ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'n'] as const) {
    const value = input[field]
    if (value !== undefined && value !== null && (typeof value !== 'number' || !Number.isFinite(value))) fail(`"${field}" must be a number.`, field)
  }
  let body = input as ChatRequestBody
  if ('fallbacks' in input) {
    const { fallbacks: _omitted, ...rest } = input
    body = rest as ChatRequestBody
  }
  return { body, model: model as string, fallbacks: (fallbacks as string[] | undefined | null) ?? [], stream: stream === true }
}
