import { shape, type Answer, type AnswerPreset, type FaultContext } from '../dialects/dialect.ts'
import { rfc3339 } from '../reply/format.ts'

/** Anthropic's error envelope, with the request id it has carried since 2025. */
export function anthropicErrorBody(type: string, message: string, requestId: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId })
}

/** Anthropic's 429 message for an organization over a per-minute limit. */
export function anthropicRateMessage(kind: 'requests' | 'tokens', limit: number): string {
  const unit = kind === 'requests' ? 'requests' : 'input tokens'
  return `This request would exceed the rate limit for your organization (org-simulator) of ${limit} ${unit} per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.`
}

/** Status, error type and Anthropic's words (undefined: `model: <model>`) per preset; `rate_limit` and `region_blocked` are shaped apart. */
const FAULTS: Record<Exclude<AnswerPreset, 'rate_limit' | 'region_blocked'>, readonly [status: number, type: string, message: string | undefined]> = {
  invalid_api_key: [401, 'authentication_error', 'invalid x-api-key'],
  insufficient_quota: [400, 'invalid_request_error', 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.'],
  model_not_found: [404, 'not_found_error', undefined],
  model_deprecated: [404, 'not_found_error', undefined],
  model_access: [403, 'permission_error', 'Your API key does not have permission to use the specified resource.'],
  server_error: [500, 'api_error', 'Internal server error'],
  bad_gateway: [502, 'api_error', 'Bad gateway'],
  unavailable: [503, 'api_error', 'Service unavailable'],
  overloaded: [529, 'overloaded_error', 'Overloaded'],
  context_length_exceeded: [400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'],
  bad_request: [400, 'invalid_request_error', 'temperature: Input should be less than or equal to 1'],
}

/** Anthropic's real answer for each preset; a scripted `message` replaces its words. */
export function anthropicFault(preset: AnswerPreset, context: FaultContext): Answer {
  const body = (type: string, message: string) => anthropicErrorBody(type, context.message ?? message, context.requestId)
  if (preset === 'region_blocked') return shape(403, JSON.stringify({ error: { type: 'forbidden', message: context.message ?? 'Request not allowed' }, type: 'error' }))
  if (preset === 'rate_limit') {
    const seconds = context.retryAfterS ?? 20
    const reset = rfc3339(Date.now() + seconds * 1000)
    return shape(429, body('rate_limit_error', anthropicRateMessage('requests', 50)), [
      'retry-after', String(Math.ceil(seconds)),
      'anthropic-ratelimit-requests-limit', '50', 'anthropic-ratelimit-requests-remaining', '0', 'anthropic-ratelimit-requests-reset', reset,
      'anthropic-ratelimit-tokens-limit', '40000', 'anthropic-ratelimit-tokens-remaining', '0', 'anthropic-ratelimit-tokens-reset', reset,
    ])
  }
  const [status, type, message] = FAULTS[preset]
  return shape(status, body(type, message ?? `model: ${context.model}`))
}
