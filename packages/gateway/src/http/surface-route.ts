/**
 * The surfaces besides chat completions as specs of the one pipeline: a surface file only says
 * how its body is checked, which caller headers a native upstream gets, and how its errors look.
 */
import type { ChatRequestBody, Surface } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import { parseJsonBody } from './body.ts'
import type { InferenceSpec } from './pipeline.ts'
import { readFallbacks, readModel, upstreamFields } from '../inference/validate.ts'
import { readStream } from './surface.ts'

/** What a surface adds to the pipeline: its framing, error body and answer when not served as the pipeline's spec says. */
export interface SurfaceSpec extends Pick<InferenceSpec, 'framing' | 'errorBody' | 'whenNotServed'> {
  surface: Surface
  /** Checks the body beyond model/stream/fallbacks; throws GatewayError('invalid_request') naming the field. */
  validate(input: Record<string, unknown>): void
  /** Whether the request may be streamed at all (embeddings and token counts are not). */
  streams: boolean
  /** Caller headers a native upstream gets unchanged. */
  forwardHeaders?: readonly string[]
  /** True when this request may only go to upstreams that speak the surface natively (stored conversations). */
  nativeOnly?(input: Record<string, unknown>): boolean
}

/** The pipeline's spec of a surface. */
export function surfaceRoute(spec: SurfaceSpec): InferenceSpec {
  const { framing, errorBody, whenNotServed } = spec
  return {
    recordAs: spec.surface === 'count_tokens' ? 'messages_count_tokens' : spec.surface,
    read(text, headers) {
      // Depth checked before parsing (http/body.ts): a body nested thousands deep is a 400, not a stack overflow.
      const input = parseJsonBody(text)
      if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.', { param: '' })
      const fields = input as Record<string, unknown>
      const model = readModel(fields, 'anthropic', 'claude-sonnet-4-5')
      const stream = spec.streams && readStream(fields)
      const fallbacks = readFallbacks(fields)
      spec.validate(fields)
      const body = upstreamFields(fields)
      const forwarded: Record<string, string> = {}
      for (const name of spec.forwardHeaders ?? []) {
        const value = headers[name]
        if (typeof value === 'string') forwarded[name] = value
      }
      return {
        request: {
          body: body as ChatRequestBody,
          model,
          fallbacks,
          // A shallow copy per attempt: an adapter sets `model` on it, translations only read.
          surface: { surface: spec.surface, stream, bodyFor: () => ({ ...body }), headers: forwarded, nativeOnly: spec.nativeOnly?.(body) === true },
        },
        stream,
        recordedBody: () => JSON.stringify(fields),
      }
    },
    framing, errorBody, whenNotServed,
  }
}

/** Anthropic's error `type` by status (docs: "Errors"); any other is `api_error` from 500 up, else `invalid_request_error`. */
const ANTHROPIC_ERROR_TYPES: Readonly<Record<number, string>> = { 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 529: 'overloaded_error' }

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`, with our code and extra_fields beside. */
export function anthropicErrorBody(error: GatewayError, requestId: string): Record<string, unknown> {
  const type = ANTHROPIC_ERROR_TYPES[error.status] ?? (error.status >= 500 ? 'api_error' : 'invalid_request_error')
  const body: Record<string, unknown> = { type: 'error', error: { type, message: error.message, code: error.code }, request_id: requestId }
  if (error.extraFields !== undefined) body.extra_fields = error.extraFields
  return body
}
