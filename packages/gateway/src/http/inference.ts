/** POST /v1/chat/completions as a spec of the one pipeline: checked by validate.ts, OpenAI's chunks and errors. */
import { CHAT_FRAMING } from '../inference/render.ts'
import { validateChatRequest } from '../inference/validate.ts'
import { parseJsonBody } from './body.ts'
import type { InferenceSpec } from './pipeline.ts'

const INFERENCE_PATH = '/v1/chat/completions'

/** True for POST /v1/chat/completions (with or without a query). */
export function isInferencePath(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(INFERENCE_PATH)) return false
  return url.length === INFERENCE_PATH.length || url.charCodeAt(INFERENCE_PATH.length) === 0x3f /* ? */
}

/** POST /v1/chat/completions. */
export const CHAT_SPEC: InferenceSpec = {
  recordAs: 'chat_completions',
  read(text) {
    const request = validateChatRequest(parseJsonBody(text))
    return { request, stream: request.stream, recordedBody: () => text }
  },
  framing: CHAT_FRAMING,
  errorBody: (error) => error.toJSON(),
}
