import type { AnswerPreset, FaultContext } from '../dialects/dialect.ts'
import { openaiErrorBody, type ErrorShape } from '../openai/errors.ts'

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

/** Azure OpenAI's real answer for each preset. */
export function azureFault(preset: AnswerPreset, context: FaultContext): ErrorShape {
  const say = (fallback: string) => context.message ?? fallback
  switch (preset) {
    case 'invalid_api_key':
      return shape(401, azureErrorBody('401', say(accessDeniedMessage)))
    case 'insufficient_quota':
      return shape(403, azureErrorBody('403', say('Out of call volume quota for OpenAI API. Quota will be replenished in 2.12:00:00.')))
    case 'rate_limit': {
      const seconds = context.retryAfterS ?? 20
      return {
        status: 429,
        headers: [
          'retry-after', String(Math.ceil(seconds)), 'retry-after-ms', String(Math.round(seconds * 1000)),
          'x-ratelimit-remaining-requests', '0', 'x-ratelimit-remaining-tokens', '0',
        ],
        body: azureErrorBody('429', say(azureRateMessage('tokens', context.apiVersion, Math.ceil(seconds)))),
      }
    }
    case 'model_not_found':
      return shape(404, azureErrorBody('DeploymentNotFound', say('The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.')))
    case 'model_access':
      return shape(403, azureErrorBody('PermissionDenied', say(`The principal lacks the required data action \`Microsoft.CognitiveServices/accounts/OpenAI/deployments/chat/completions/action\` to perform \`POST /openai/deployments/${context.model}/chat/completions\` operation.`)))
    case 'model_deprecated':
      return shape(410, azureErrorBody('ModelDeprecated', say('The model associated with the deployment is deprecated and no longer available for use. Please refer to the Azure OpenAI service documentation for more information.')))
    case 'region_blocked':
      return shape(403, azureErrorBody('403', say('Access denied due to Virtual Network/Firewall rules.')))
    case 'server_error':
      return shape(500, openaiErrorBody(say('The server had an error while processing your request. Sorry about that!'), 'server_error', null, null))
    case 'bad_gateway':
      return shape(502, azureErrorBody('BadGateway', say('Bad gateway.')))
    case 'unavailable':
    case 'overloaded':
      return shape(503, azureErrorBody('ServiceUnavailable', say('The service is temporarily unable to process your request. Please try again later.')))
    case 'context_length_exceeded':
      return shape(400, openaiErrorBody(say("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."), 'invalid_request_error', 'messages', 'context_length_exceeded'))
    case 'bad_request':
      return shape(400, openaiErrorBody(say("Invalid value for 'temperature': expected a number between 0 and 2."), 'invalid_request_error', 'temperature', 'invalid_value'))
  }
}

function shape(status: number, body: string): ErrorShape {
  return { status, headers: [], body }
}
