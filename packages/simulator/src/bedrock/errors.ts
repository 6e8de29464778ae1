/** Amazon Bedrock's error answers: the type in `x-amzn-errortype`, the words in `message`. */
import { shape, type Answer, type AnswerPreset, type FaultContext } from '../dialects/dialect.ts'

/** One Bedrock error: status, type header (`x-amzn-errortype`) and `{message}` body. */
export function bedrockError(status: number, type: string, message: string): Answer {
  return shape(status, JSON.stringify({ message }), ['x-amzn-errortype', `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`])
}

/**
 * Bedrock's real answer per preset: status, error type (null: a proxy in front of the endpoint
 * answered, with no type) and Bedrock's own words. Bedrock sends no retry-after on a
 * ThrottlingException; the SDKs back off on their own.
 */
const FAULTS: Record<AnswerPreset, readonly [status: number, type: string | null, message: string]> = {
  invalid_api_key: [403, 'UnrecognizedClientException', 'The security token included in the request is invalid.'],
  insufficient_quota: [400, 'ServiceQuotaExceededException', 'Your request exceeds the service quota for your account. You can resubmit your request later.'],
  rate_limit: [429, 'ThrottlingException', 'Too many requests, please wait before trying again.'],
  model_not_found: [400, 'ValidationException', 'The provided model identifier is invalid.'],
  model_deprecated: [404, 'ResourceNotFoundException', 'This model version has reached the end of its life. Please refer to the AWS documentation for more details.'],
  model_access: [403, 'AccessDeniedException', "You don't have access to the model with the specified model ID."],
  region_blocked: [400, 'ValidationException', 'Access to Anthropic models is not allowed from unsupported countries, regions, or territories. Please refer to https://www.anthropic.com/supported-countries for more information.'],
  server_error: [500, 'InternalServerException', 'An internal server error occurred. Retry your request.'],
  bad_gateway: [502, null, 'Bad Gateway'],
  unavailable: [503, 'ServiceUnavailableException', 'Bedrock is unable to process your request.'],
  overloaded: [429, 'ModelNotReadyException', 'Model is not ready to serve inference requests. The AWS SDK will automatically retry the operation.'],
  context_length_exceeded: [400, 'ValidationException', 'Input is too long for requested model.'],
  bad_request: [400, 'ValidationException', 'Malformed input request: #: extraneous key [topK] is not permitted, please reformat your input and try again.'],
}

/** Bedrock's real answer for each preset; a scripted `message` replaces its words. */
export function bedrockFault(preset: AnswerPreset, context: FaultContext): Answer {
  const [status, type, message] = FAULTS[preset]
  const said = context.message ?? message
  return type === null ? shape(status, JSON.stringify({ message: said })) : bedrockError(status, type, said)
}
