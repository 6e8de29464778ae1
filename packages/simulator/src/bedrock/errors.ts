/** Amazon Bedrock's error answers: the type in `x-amzn-errortype`, the words in `message`. */
import type { AnswerPreset, FaultContext } from '../dialects/dialect.ts'
import type { ErrorShape } from '../openai/errors.ts'

/** The `x-amzn-errortype` value Bedrock sends for an error type. */
export function amznErrorType(type: string): string {
  return `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`
}

/** One Bedrock error: status, type header and `{message}` body. */
export function bedrockError(status: number, type: string, message: string, extra: string[] = []): ErrorShape {
  return { status, headers: ['x-amzn-errortype', amznErrorType(type), ...extra], body: JSON.stringify({ message }) }
}

/** Bedrock's real answer for each preset. */
export function bedrockFault(preset: AnswerPreset, context: FaultContext): ErrorShape {
  const say = (fallback: string) => context.message ?? fallback
  switch (preset) {
    case 'invalid_api_key':
      return bedrockError(403, 'UnrecognizedClientException', say('The security token included in the request is invalid.'))
    case 'insufficient_quota':
      return bedrockError(400, 'ServiceQuotaExceededException', say('Your request exceeds the service quota for your account. You can resubmit your request later.'))
    case 'rate_limit':
      // Bedrock sends no retry-after; the SDKs back off on their own.
      return bedrockError(429, 'ThrottlingException', say('Too many requests, please wait before trying again.'))
    case 'model_not_found':
      return bedrockError(400, 'ValidationException', say('The provided model identifier is invalid.'))
    case 'model_deprecated':
      return bedrockError(404, 'ResourceNotFoundException', say('This model version has reached the end of its life. Please refer to the AWS documentation for more details.'))
    case 'model_access':
      return bedrockError(403, 'AccessDeniedException', say("You don't have access to the model with the specified model ID."))
    case 'region_blocked':
      return bedrockError(400, 'ValidationException', say('Access to Anthropic models is not allowed from unsupported countries, regions, or territories. Please refer to https://www.anthropic.com/supported-countries for more information.'))
    case 'server_error':
      return bedrockError(500, 'InternalServerException', say('An internal server error occurred. Retry your request.'))
    case 'bad_gateway':
      // A proxy in front of the endpoint, not Bedrock itself: no error type.
      return { status: 502, headers: [], body: JSON.stringify({ message: say('Bad Gateway') }) }
    case 'unavailable':
      return bedrockError(503, 'ServiceUnavailableException', say('Bedrock is unable to process your request.'))
    case 'overloaded':
      return bedrockError(429, 'ModelNotReadyException', say('Model is not ready to serve inference requests. The AWS SDK will automatically retry the operation.'))
    case 'context_length_exceeded':
      return bedrockError(400, 'ValidationException', say('Input is too long for requested model.'))
    case 'bad_request':
      return bedrockError(400, 'ValidationException', say('Malformed input request: #: extraneous key [topK] is not permitted, please reformat your input and try again.'))
  }
}
