/** POST /v1/embeddings: OpenAI's embeddings, served by OpenAI, Azure and OpenAI-compatible providers. */
import { GatewayError } from '../errors.ts'
import { CHAT_FRAMING } from '../inference/render.ts'
import type { SurfaceSpec } from './surface-route.ts'

/** POST /v1/embeddings. */
export const EMBEDDINGS_SPEC: SurfaceSpec = {
  surface: 'embeddings',
  validate(input) {
    const text = input.input
    const ok = typeof text === 'string' || (Array.isArray(text) && text.length > 0 && (text.every((item) => typeof item === 'string') || text.every((item) => typeof item === 'number') || text.every((item) => Array.isArray(item))))
    if (!ok) throw new GatewayError('invalid_request', '"input" is required: a string, an array of strings, or an array of token arrays.', { param: 'input' })
  },
  framing: CHAT_FRAMING,
  errorBody: (error) => error.toJSON(),
  streams: false,
}
