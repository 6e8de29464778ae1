/**
 * The surfaces besides chat completions as specs of the one pipeline: a surface file only says
 * how its body is checked, which caller headers a native upstream gets, and how its errors look.
 */
import type { ChatRequestBody, Surface } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import { parseJsonBody } from './body.ts'
import type { InferenceSpec } from './pipeline.ts'
import { readFallbacks, upstreamFields } from '../inference/validate.ts'
import { readModel, readStream } from './surface.ts'

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
  return {
    recordAs: spec.surface === 'count_tokens' ? 'messages_count_tokens' : spec.surface,
    read(text, headers) {
      // Depth checked before parsing (http/body.ts): a body nested thousands deep is a 400, not a stack overflow.
      const input = parseJsonBody(text)
      if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.', { param: '' })
      const fields = input as Record<string, unknown>
      const model = readModel(fields)
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
    framing: spec.framing,
    errorBody: spec.errorBody,
    whenNotServed: spec.whenNotServed,
  }
}

/** The OpenAI error body (Responses and embeddings callers read this shape). */
export function openAiErrorBody(error: GatewayError): Record<string, unknown> {
  return error.toJSON()
}

/** Anthropic's error `type` for a status (docs: "Errors"). */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 404) return 'not_found_error'
  if (status === 413) return 'request_too_large'
  if (status === 429) return 'rate_limit_error'
  if (status === 529) return 'overloaded_error'
  if (status >= 500) return 'api_error'
  return 'invalid_request_error'
}

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`, with our code and extra_fields beside. */
export function anthropicErrorBody(error: GatewayError, requestId: string): Record<string, unknown> {
  const body: Record<string, unknown> = { type: 'error', error: { type: anthropicErrorType(error.status), message: error.message, code: error.code }, request_id: requestId }
  if (error.extraFields !== undefined) body.extra_fields = error.extraFields
  return body
}
