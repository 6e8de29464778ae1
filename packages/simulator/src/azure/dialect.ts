import { headerKey, jsonAnswer, shape, type Answer, type Dialect } from '../dialects/dialect.ts'
import { bearerKey, chatDialect } from '../openai/dialect.ts'
import { retryAfterSeconds } from '../reply/format.ts'
import { accessDeniedMessage, azureErrorBody, azureFaults, azureRateMessage } from './errors.ts'

const apiKey = headerKey('api-key')

function baseHeaders(requestId: string): string[] {
  return ['apim-request-id', requestId, 'x-request-id', requestId, 'x-ms-region', 'Simulated Region', 'x-ms-client-request-id', requestId]
}

/** Azure's 404 for a path it does not serve, including a missing `api-version`. */
export function azureNotFound(requestId: string): Answer {
  return jsonAnswer(404, baseHeaders(requestId), azureErrorBody('404', 'Resource not found'))
}

/** Azure OpenAI: `api-key` header, the deployment in the path, OpenAI's bodies with content-filter annotations. */
export const azureDialect: Dialect = chatDialect({
  provider: 'azure',
  readKey: (headers) => apiKey(headers) ?? bearerKey(headers),
  baseHeaders,
  missingKeyBody: azureErrorBody('401', accessDeniedMessage),
  invalidJsonHint: '',
  faults: azureFaults,
  rateLimited(decision, context, rateHeaders) {
    const seconds = retryAfterSeconds(decision.retryAfterMs)
    const headers = rateHeaders(['retry-after', String(seconds), 'retry-after-ms', String(Math.ceil(decision.retryAfterMs))], decision.view)
    return shape(429, azureErrorBody('429', azureRateMessage(decision.kind, context.apiVersion, seconds)), headers)
  },
})
