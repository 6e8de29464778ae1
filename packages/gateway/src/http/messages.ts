/**
 * POST /v1/messages and /v1/messages/count_tokens (what Claude Code sends): native at Anthropic with
 * the caller's `anthropic-version` and `anthropic-beta`, translated elsewhere; Anthropic's errors.
 */
import { estimateInputTokens } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import { ANTHROPIC_FRAMING } from '../inference/event-framing.ts'
import { CHAT_FRAMING } from '../inference/render.ts'
import { anthropicErrorBody, type SurfaceSpec } from './surface-route.ts'

const FORWARDED = ['anthropic-version', 'anthropic-beta'] as const

/**
 * Only what every route needs: a conversation. Anthropic judges the rest itself (Claude Code sends
 * roles newer than this gateway), and a translation refuses only what it cannot map (issue 37).
 */
function checkMessages(input: Record<string, unknown>): void {
  const messages = input.messages
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new GatewayError('invalid_request', messages === undefined ? 'messages: Field required (an array of {role, content}).' : 'messages: must be a non-empty array of {role, content}.', { param: 'messages' })
  }
}

/** POST /v1/messages. */
export const MESSAGES_SPEC: SurfaceSpec = {
  surface: 'messages',
  validate(input) {
    checkMessages(input)
    const maxTokens = input.max_tokens
    if (maxTokens === undefined) throw new GatewayError('invalid_request', 'max_tokens: Field required.', { param: 'max_tokens' })
    if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) throw new GatewayError('invalid_request', 'max_tokens: Input should be a valid integer greater than or equal to 1.', { param: 'max_tokens' })
  },
  framing: ANTHROPIC_FRAMING,
  errorBody: anthropicErrorBody,
  streams: true,
  forwardHeaders: FORWARDED,
}

/** POST /v1/messages/count_tokens: Anthropic counts natively; with no Anthropic provider for the model, a local estimate. */
export const COUNT_TOKENS_SPEC: SurfaceSpec = {
  surface: 'count_tokens',
  validate: checkMessages,
  framing: CHAT_FRAMING,
  errorBody: anthropicErrorBody,
  streams: false,
  forwardHeaders: FORWARDED,
  whenNotServed: (input, model) => ({
    input_tokens: estimateInputTokens(input),
    extra_fields: { provider: null, model, key_id: null, key_name: null, attempts: [], estimated: true },
  }),
}
