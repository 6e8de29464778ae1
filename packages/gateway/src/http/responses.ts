/**
 * POST /v1/responses (what Codex CLI sends): native at OpenAI and Azure, translated through chat
 * elsewhere. `previous_response_id` needs the upstream that stored the conversation: only native
 * providers are tried, and a model none of them serves is a 400.
 */
import { GatewayError } from '../errors.ts'
import { RESPONSES_FRAMING } from '../inference/event-framing.ts'
import type { SurfaceSpec } from './surface-route.ts'

/** POST /v1/responses. */
export const RESPONSES_SPEC: SurfaceSpec = {
  surface: 'responses',
  validate(input) {
    const body = input.input
    if (body !== undefined && typeof body !== 'string' && !Array.isArray(body)) throw new GatewayError('invalid_request', '"input" must be a string or an array of input items.', { param: 'input' })
    if (body === undefined && typeof input.previous_response_id !== 'string') throw new GatewayError('invalid_request', '"input" is required: a string or an array of input items.', { param: 'input' })
    const max = input.max_output_tokens
    if (max !== undefined && max !== null && (typeof max !== 'number' || !Number.isInteger(max) || max < 1)) throw new GatewayError('invalid_request', '"max_output_tokens" must be a positive integer.', { param: 'max_output_tokens' })
  },
  nativeOnly: (input) => typeof input.previous_response_id === 'string' && input.previous_response_id !== '',
  whenNotServed(input, model, error) {
    if (typeof input.previous_response_id !== 'string') throw error
    throw new GatewayError('invalid_request', `previous_response_id: the conversation is stored at the upstream that made it (OpenAI or Azure with "store": true), and no such provider serves model "${model}". Send the whole conversation in "input" instead.`, { param: 'previous_response_id', extraFields: error.extraFields })
  },
  framing: RESPONSES_FRAMING,
  errorBody: (error) => error.toJSON(),
  streams: true,
}
