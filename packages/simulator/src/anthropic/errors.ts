import type { AnswerPreset, FaultContext } from '../dialects/dialect.ts'
import type { ErrorShape } from '../openai/errors.ts'
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

/** Anthropic's real answer for each preset. */
export function anthropicFault(preset: AnswerPreset, context: FaultContext): ErrorShape {
  const say = (fallback: string) => context.message ?? fallback
  const body = (type: string, message: string) => anthropicErrorBody(type, say(message), context.requestId)
  switch (preset) {
    case 'invalid_api_key':
      return shape(401, body('authentication_error', 'invalid x-api-key'))
    case 'insufficient_quota':
      return shape(400, body('invalid_request_error', 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.'))
    case 'rate_limit': {
      const seconds = context.retryAfterS ?? 20
      const reset = rfc3339(Date.now() + seconds * 1000)
      return {
        status: 429,
        headers: [
          'retry-after', String(Math.ceil(seconds)),
          'anthropic-ratelimit-requests-limit', '50', 'anthropic-ratelimit-requests-remaining', '0', 'anthropic-ratelimit-requests-reset', reset,
          'anthropic-ratelimit-tokens-limit', '40000', 'anthropic-ratelimit-tokens-remaining', '0', 'anthropic-ratelimit-tokens-reset', reset,
        ],
        body: body('rate_limit_error', anthropicRateMessage('requests', 50)),
      }
    }
    case 'model_not_found':
    case 'model_deprecated':
      return shape(404, body('not_found_error', `model: ${context.model}`))
    case 'model_access':
      return shape(403, body('permission_error', 'Your API key does not have permission to use the specified resource.'))
    case 'region_blocked':
      return shape(403, JSON.stringify({ error: { type: 'forbidden', message: say('Request not allowed') }, type: 'error' }))
    case 'server_error':
      return shape(500, body('api_error', 'Internal server error'))
    case 'bad_gateway':
      return shape(502, body('api_error', 'Bad gateway'))
    case 'unavailable':
      return shape(503, body('api_error', 'Service unavailable'))
    case 'overloaded':
      return shape(529, body('overloaded_error', 'Overloaded'))
    case 'context_length_exceeded':
      return shape(400, body('invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'))
    case 'bad_request':
      return shape(400, body('invalid_request_error', 'temperature: Input should be less than or equal to 1'))
  }
}

function shape(status: number, body: string): ErrorShape {
  return { status, headers: [], body }
}
