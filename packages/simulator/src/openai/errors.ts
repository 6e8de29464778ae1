import { shape, type Answer, type AnswerPreset, type FaultContext } from '../dialects/dialect.ts'

/** OpenAI's error envelope. */
export function openaiErrorBody(message: string, type: string, param: string | null, code: string | number | null): string {
  return JSON.stringify({ error: { message, type, param, code } })
}

/** OpenAI's key mask: a short prefix, stars, the last four characters. */
export function maskKey(key: string): string {
  if (key.length <= 8) return `${key.slice(0, 2)}****${key.slice(-2)}`
  return `${key.slice(0, 3)}${'*'.repeat(Math.min(key.length - 7, 40))}${key.slice(-4)}`
}

/** The rate-limit message OpenAI writes for a per-minute limit. */
export function openaiRateMessage(model: string, kind: 'requests' | 'tokens', limit: number, used: number, requested: number, wait: string): string {
  const unit = kind === 'requests' ? 'requests per min (RPM)' : 'tokens per min (TPM)'
  return `Rate limit reached for ${model} in organization org-simulator on ${unit}: Limit ${limit}, Used ${used}, Requested ${requested}. Please try again in ${wait}. Visit https://platform.openai.com/account/rate-limits to learn more.`
}

/** A preset's answer; a scripted `message` replaces the provider's words. */
export type Fault = (context: FaultContext) => Answer

/** An `invalid_request_error` (the type of most of OpenAI's refusals). */
const invalid = (status: number, message: string, param: string | null, code: string) => shape(status, openaiErrorBody(message, 'invalid_request_error', param, code))

/** OpenAI's real answer for each preset (status, extra headers, body). */
export const openaiFaults: Record<AnswerPreset, Fault> = {
  invalid_api_key: ({ key, message }) => invalid(401, message ?? `Incorrect API key provided: ${maskKey(key)}. You can find your API key at https://platform.openai.com/account/api-keys.`, null, 'invalid_api_key'),
  insufficient_quota: ({ message }) => shape(429, openaiErrorBody(message ?? 'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.', 'insufficient_quota', null, 'insufficient_quota')),
  rate_limit: ({ model, retryAfterS, message }) => {
    const seconds = retryAfterS ?? 20
    return shape(429, openaiErrorBody(message ?? openaiRateMessage(model, 'requests', 500, 500, 1, `${seconds}s`), 'requests', null, 'rate_limit_exceeded'), [
      'retry-after', String(Math.ceil(seconds)),
      'x-ratelimit-limit-requests', '500', 'x-ratelimit-remaining-requests', '0', 'x-ratelimit-reset-requests', `${seconds}s`,
      'x-ratelimit-limit-tokens', '30000', 'x-ratelimit-remaining-tokens', '0', 'x-ratelimit-reset-tokens', `${seconds}s`,
    ])
  },
  model_not_found: ({ model, message }) => invalid(404, message ?? `The model \`${model}\` does not exist or you do not have access to it.`, null, 'model_not_found'),
  model_access: ({ model, message }) => invalid(403, message ?? `Project \`proj_simulator\` does not have access to model \`${model}\``, null, 'model_not_found'),
  model_deprecated: ({ model, message }) => invalid(404, message ?? `The model \`${model}\` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations`, null, 'model_not_found'),
  region_blocked: ({ message }) => shape(403, JSON.stringify({ error: { code: 'unsupported_country_region_territory', message: message ?? 'Country, region, or territory not supported', param: null, type: 'request_forbidden' } })),
  server_error: ({ message }) => shape(500, openaiErrorBody(message ?? 'The server had an error while processing your request. Sorry about that!', 'server_error', null, null)),
  bad_gateway: ({ message }) => shape(502, JSON.stringify({ error: { code: 502, message: message ?? 'Bad gateway.', param: null, type: 'cf_bad_gateway' } })),
  unavailable: ({ message }) => shape(503, openaiErrorBody(message ?? 'The server is overloaded or not ready yet.', 'server_error', null, null)),
  overloaded: ({ message }) => shape(503, openaiErrorBody(message ?? 'The engine is currently overloaded, please try again later.', 'server_error', null, null)),
  context_length_exceeded: ({ message }) => invalid(400, message ?? `This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.`, 'messages', 'context_length_exceeded'),
  bad_request: ({ message }) => invalid(400, message ?? "Invalid value for 'temperature': expected a number between 0 and 2.", 'temperature', 'invalid_value'),
}
