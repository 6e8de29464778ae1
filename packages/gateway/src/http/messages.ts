/**
 * POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API, what Claude Code
 * sends (`ANTHROPIC_BASE_URL`). Anthropic upstreams get the body natively with the caller's
 * `anthropic-version` and `anthropic-beta`; OpenAI, Azure and OpenAI-compatible upstreams
 * get it translated (providers/src/surfaces). Errors in Anthropic's shape.
 */
import { estimateInputTokens } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import { ANTHROPIC_FRAMING } from '../inference/event-framing.ts'
import { CHAT_FRAMING } from '../inference/render.ts'
import { anthropicErrorBody, type SurfaceSpec } from './surface-route.ts'

const FORWARDED = ['anthropic-version', 'anthropic-beta'] as const

/**
 * Only what every route needs: a conversation to send. Roles and content blocks are not
 * checked here: an Anthropic upstream gets the body as it came and judges it itself (Claude
 * Code sends roles and betas newer than this gateway, e.g. a `system` turn inside `messages`),
 * and a translation refuses, naming the field, only what it cannot map (issue 37).
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
