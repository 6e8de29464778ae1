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

/** Error type, status and Anthropic's words (none: `model: <model>`) per preset; `rate_limit` and `region_blocked` are shaped apart. */
const FAULTS: Record<Exclude<AnswerPreset, 'rate_limit' | 'region_blocked'>, readonly [type: string, status: number, message?: string]> = {
  invalid_api_key: ['authentication_error', 401, 'invalid x-api-key'],
  insufficient_quota: ['invalid_request_error', 400, 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.'],
  model_not_found: ['not_found_error', 404],
  model_deprecated: ['not_found_error', 404],
  model_access: ['permission_error', 403, 'Your API key does not have permission to use the specified resource.'],
  server_error: ['api_error', 500, 'Internal server error'],
  bad_gateway: ['api_error', 502, 'Bad gateway'],
  unavailable: ['api_error', 503, 'Service unavailable'],
  overloaded: ['overloaded_error', 529, 'Overloaded'],
  context_length_exceeded: ['invalid_request_error', 400, 'prompt is too long: 210000 tokens > 200000 maximum'],
  bad_request: ['invalid_request_error', 400, 'temperature: Input should be less than or equal to 1'],
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
  const [type, status, message] = FAULTS[preset]
  return shape(status, body(type, message ?? `model: ${context.model}`))
}
