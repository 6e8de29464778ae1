import { shape, type AnswerPreset } from '../dialects/dialect.ts'
import { openaiFaults, type Fault } from '../openai/errors.ts'

/** Azure's own envelope (`{error: {code, message}}`), used by its gateway layer; the model layer answers in OpenAI's. */
export function azureErrorBody(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } })
}

/** The access-denied answer Azure gives for a missing or wrong key. */
export const accessDeniedMessage = 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.'

/** Azure's 429 message for a deployment over its per-minute limit. */
export function azureRateMessage(kind: 'requests' | 'tokens', apiVersion: string | undefined, seconds: number): string {
  const limit = kind === 'requests' ? 'call rate limit' : 'token rate limit'
  return `Requests to the ChatCompletions_Create Operation under Azure OpenAI API version ${apiVersion ?? '2024-10-21'} have exceeded ${limit} of your current OpenAI S0 pricing tier. Please retry after ${seconds} seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.`
}

const azure = (status: number, code: string, message: string) => shape(status, azureErrorBody(code, message))
const unavailable: Fault = ({ message }) => azure(503, 'ServiceUnavailable', message ?? 'The service is temporarily unable to process your request. Please try again later.')

/** Azure OpenAI's real answer for each preset; the model layer's (server error, bad request, context length) is OpenAI's. */
export const azureFaults: Record<AnswerPreset, Fault> = {
  invalid_api_key: ({ message }) => azure(401, '401', message ?? accessDeniedMessage),
  insufficient_quota: ({ message }) => azure(403, '403', message ?? 'Out of call volume quota for OpenAI API. Quota will be replenished in 2.12:00:00.'),
  rate_limit: ({ retryAfterS, apiVersion, message }) => {
    const seconds = retryAfterS ?? 20
    return shape(429, azureErrorBody('429', message ?? azureRateMessage('tokens', apiVersion, Math.ceil(seconds))), [
      'retry-after', String(Math.ceil(seconds)), 'retry-after-ms', String(Math.round(seconds * 1000)),
      'x-ratelimit-remaining-requests', '0', 'x-ratelimit-remaining-tokens', '0',
    ])
  },
  model_not_found: ({ message }) => azure(404, 'DeploymentNotFound', message ?? 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.'),
  model_access: ({ model, message }) => azure(403, 'PermissionDenied', message ?? `The principal lacks the required data action \`Microsoft.CognitiveServices/accounts/OpenAI/deployments/chat/completions/action\` to perform \`POST /openai/deployments/${model}/chat/completions\` operation.`),
  model_deprecated: ({ message }) => azure(410, 'ModelDeprecated', message ?? 'The model associated with the deployment is deprecated and no longer available for use. Please refer to the Azure OpenAI service documentation for more information.'),
  region_blocked: ({ message }) => azure(403, '403', message ?? 'Access denied due to Virtual Network/Firewall rules.'),
  server_error: openaiFaults.server_error,
  bad_gateway: ({ message }) => azure(502, 'BadGateway', message ?? 'Bad gateway.'),
  unavailable,
  overloaded: unavailable,
  context_length_exceeded: openaiFaults.context_length_exceeded,
  bad_request: openaiFaults.bad_request,
}
