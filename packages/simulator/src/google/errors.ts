/**
 * Gemini API and Vertex AI error answers: `{error: {code, message, status, details?}}` with
 * google.rpc details (ErrorInfo reasons, QuotaFailure, RetryInfo), as in the providers'
 * documented fixtures (packages/providers/test/fixtures/errors/google.ts).
 */
import { shape, type Answer, type AnswerPreset, type FaultContext } from '../dialects/dialect.ts'

/** Which front end answers: the Gemini API (API keys) or Vertex AI (OAuth2, projects). */
export type GoogleSurface = 'gemini' | 'vertex'

/** One Google error answer. */
export function googleError(code: number, status: string, message: string, details?: unknown[]): Answer {
  return shape(code, JSON.stringify({ error: details === undefined ? { code, message, status } : { code, message, status, details } }))
}

/** A google.rpc.ErrorInfo detail. */
export function errorInfo(reason: string, service: string, metadata: Record<string, string> = {}): Record<string, unknown> {
  return { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com', metadata: { service, ...metadata } }
}

export const SERVICE: Record<GoogleSurface, string> = { gemini: 'generativelanguage.googleapis.com', vertex: 'aiplatform.googleapis.com' }

/** Where a Vertex model lives, as Vertex names it in its errors. */
function resource(model: string): string {
  const publisher = model.startsWith('claude') ? 'anthropic' : 'google'
  return `projects/simulator-project/locations/us-central1/publishers/${publisher}/models/${model}`
}

/** Google's real answer for each preset, on the Gemini API or on Vertex AI; a scripted `message` replaces Google's words. */
export const googleFaults: Record<AnswerPreset, (context: FaultContext, surface: GoogleSurface) => Answer> = {
  invalid_api_key: (context, surface) => surface === 'gemini'
    ? googleError(400, 'INVALID_ARGUMENT', context.message ?? 'API key not valid. Please pass a valid API key.', [errorInfo('API_KEY_INVALID', SERVICE.gemini)])
    : googleError(401, 'UNAUTHENTICATED', context.message ?? 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.', [errorInfo('ACCESS_TOKEN_EXPIRED', SERVICE.vertex)]),
  insufficient_quota: (context, surface) => surface === 'gemini'
    ? googleError(429, 'RESOURCE_EXHAUSTED', context.message ?? 'Your prepayment credits are depleted. Please go to AI Studio to manage your project and billing.')
    : googleError(403, 'PERMISSION_DENIED', context.message ?? 'This API method requires billing to be enabled. Please enable billing on project #123456789 by visiting https://console.developers.google.com/billing/enable?project=123456789 then retry.', [errorInfo('BILLING_DISABLED', SERVICE.vertex)]),
  rate_limit: (context, surface) => googleError(429, 'RESOURCE_EXHAUSTED', context.message ?? (surface === 'gemini'
    ? 'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.'
    : `Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model with base model: ${context.model}. Please submit a quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.`), [
    { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaMetric: `${SERVICE[surface]}/generate_content_requests`, quotaId: 'GenerateRequestsPerMinutePerProjectPerModel', quotaDimensions: { location: 'global', model: context.model } }] },
    { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${context.retryAfterS ?? 20}s` },
  ]),
  model_not_found: (context, surface) => surface === 'gemini'
    ? googleError(404, 'NOT_FOUND', context.message ?? `models/${context.model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`)
    : googleError(404, 'NOT_FOUND', context.message ?? `Publisher Model \`${resource(context.model)}\` was not found or your project does not have access to it. Please ensure you are using a valid model version.`),
  model_access: (context, surface) => surface === 'gemini'
    ? googleError(403, 'PERMISSION_DENIED', context.message ?? `Permission denied on resource models/${context.model} (or it may not exist).`, [errorInfo('IAM_PERMISSION_DENIED', SERVICE.gemini)])
    : googleError(403, 'PERMISSION_DENIED', context.message ?? `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/${resource(context.model)}' (or it may not exist).`, [errorInfo('IAM_PERMISSION_DENIED', SERVICE.vertex, { permission: 'aiplatform.endpoints.predict' })]),
  model_deprecated: (context) => googleError(404, 'NOT_FOUND', context.message ?? `This model models/${context.model} is no longer available. Please update your code to use a newer model for the latest features and improvements.`),
  region_blocked: (context) => googleError(400, 'FAILED_PRECONDITION', context.message ?? 'User location is not supported for the API use.'),
  server_error: (context) => googleError(500, 'INTERNAL', context.message ?? 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting'),
  // A proxy in front of the front end: Google's HTML error page, no JSON.
  bad_gateway: (context) => shape(502, `<!DOCTYPE html><html lang=en><title>Error 502 (Server Error)!!1</title><p><b>502.</b> <ins>${context.message ?? 'That’s an error.'}</ins></html>`, ['content-type', 'text/html; charset=UTF-8']),
  unavailable: (context) => googleError(503, 'UNAVAILABLE', context.message ?? 'The service is currently unavailable.'),
  overloaded: (context) => googleError(503, 'UNAVAILABLE', context.message ?? 'The model is overloaded. Please try again later.'),
  context_length_exceeded: (context) => googleError(400, 'INVALID_ARGUMENT', context.message ?? 'The input token count (1210000) exceeds the maximum number of tokens allowed (1048576).'),
  bad_request: (context) => googleError(400, 'INVALID_ARGUMENT', context.message ?? 'Invalid JSON payload received. Unknown name "topK" at \'generation_config\': Cannot find field.'),
}
