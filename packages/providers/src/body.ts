/** Request body helpers shared by the adapters. */
import type { AttemptRequest, ChatRequestBody } from './types.ts'

/** The model name the key's upstream knows: the key's alias for the requested model, else the model itself. */
export function upstreamModel(request: Pick<AttemptRequest, 'key' | 'model'>): string {
  return request.key.aliases?.[request.model] ?? request.model
}

/**
 * Serializes the caller's body for the upstream with the upstream's model name. The body is
 * the engine's own parsed copy and every attempt sets `model` before sending, so it is
 * updated in place rather than copied.
 */
export function upstreamBody(body: ChatRequestBody, model: string): string {
  body.model = model
  return JSON.stringify(body)
}
