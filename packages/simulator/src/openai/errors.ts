import type { AnswerPreset, FaultContext } from '../dialects/dialect.ts'

/** An error answer before the dialect adds its common headers. */
export interface ErrorShape {
  status: number
  headers: string[]
  body: string
}

/** OpenAI's error envelope. */
export function openaiErrorBody(message: string, type: string, param: string | null, code: string | number | null): string {
  return JSON.stringify({ error: { message, type, param, code } })
}

/** OpenAI's key mask: a short prefix, stars, the last four characters. */
export function maskKey(key: string): string {
  if (key.length <= 8) return `${key.slice(0, 2)}****${key.slice(-2)}`
  return `${key.slice(0, 3)}${'*'.repeat(Math.min(key.length - 7, 40))}${key.slice(-4)}`
}

const rateLimitDocs = 'Visit https://platform.openai.com/account/rate-limits to learn more.'

/** The rate-limit message OpenAI writes for a per-minute limit. */
export function openaiRateMessage(model: string, kind: 'requests' | 'tokens', limit: number, used: number, requested: number, wait: string): string {
  const unit = kind === 'requests' ? 'requests per min (RPM)' : 'tokens per min (TPM)'
  return `Rate limit reached for ${model} in organization org-simulator on ${unit}: Limit ${limit}, Used ${used}, Requested ${requested}. Please try again in ${wait}. ${rateLimitDocs}`
}

/** OpenAI's real answer for each preset (status, extra headers, body). */
export function openaiFault(preset: AnswerPreset, context: FaultContext): ErrorShape {
  const say = (fallback: string) => context.message ?? fallback
  const model = context.model
  switch (preset) {
    case 'invalid_api_key':
      return shape(401, openaiErrorBody(say(`Incorrect API key provided: ${maskKey(context.key)}. You can find your API key at https://platform.openai.com/account/api-keys.`), 'invalid_request_error', null, 'invalid_api_key'))
    case 'insufficient_quota':
      return shape(429, openaiErrorBody(say('You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.'), 'insufficient_quota', null, 'insufficient_quota'))
    case 'rate_limit': {
      const seconds = context.retryAfterS ?? 20
      return {
        status: 429,
        headers: [
          'retry-after', String(Math.ceil(seconds)),
          'x-ratelimit-limit-requests', '500', 'x-ratelimit-remaining-requests', '0', 'x-ratelimit-reset-requests', `${seconds}s`,
          'x-ratelimit-limit-tokens', '30000', 'x-ratelimit-remaining-tokens', '0', 'x-ratelimit-reset-tokens', `${seconds}s`,
        ],
        body: openaiErrorBody(say(openaiRateMessage(model, 'requests', 500, 500, 1, `${seconds}s`)), 'requests', null, 'rate_limit_exceeded'),
      }
    }
    case 'model_not_found':
      return shape(404, openaiErrorBody(say(`The model \`${model}\` does not exist or you do not have access to it.`), 'invalid_request_error', null, 'model_not_found'))
    case 'model_access':
      return shape(403, openaiErrorBody(say(`Project \`proj_simulator\` does not have access to model \`${model}\``), 'invalid_request_error', null, 'model_not_found'))
    case 'model_deprecated':
      return shape(404, openaiErrorBody(say(`The model \`${model}\` has been deprecated, learn more here: https://platform.openai.com/docs/deprecations`), 'invalid_request_error', null, 'model_not_found'))
    case 'region_blocked':
      return shape(403, JSON.stringify({ error: { code: 'unsupported_country_region_territory', message: say('Country, region, or territory not supported'), param: null, type: 'request_forbidden' } }))
    case 'server_error':
      return shape(500, openaiErrorBody(say('The server had an error while processing your request. Sorry about that!'), 'server_error', null, null))
    case 'bad_gateway':
      return shape(502, JSON.stringify({ error: { code: 502, message: say('Bad gateway.'), param: null, type: 'cf_bad_gateway' } }))
    case 'unavailable':
      return shape(503, openaiErrorBody(say('The server is overloaded or not ready yet.'), 'server_error', null, null))
    case 'overloaded':
      return shape(503, openaiErrorBody(say('The engine is currently overloaded, please try again later.'), 'server_error', null, null))
    case 'context_length_exceeded':
      return shape(400, openaiErrorBody(say(`This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.`), 'invalid_request_error', 'messages', 'context_length_exceeded'))
    case 'bad_request':
      return shape(400, openaiErrorBody(say("Invalid value for 'temperature': expected a number between 0 and 2."), 'invalid_request_error', 'temperature', 'invalid_value'))
  }
}

function shape(status: number, body: string): ErrorShape {
  return { status, headers: [], body }
}
