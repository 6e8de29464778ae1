/**
 * Translation between OpenAI chat.completions and Anthropic's Messages API:
 * pure functions, no I/O. The Anthropic adapter sends what `toAnthropicRequest`
 * builds and hands back what `fromAnthropicResponse` / `anthropicStreamToOpenAI`
 * make of the answer, so callers only ever see OpenAI shapes.
 */
export { AnthropicStreamError, TranslationError, type TranslationErrorCode } from './errors.ts'
export { type FinishReason, type OpenAIUsage, finishReasonFor } from './finish.ts'
export { DEFAULT_MAX_TOKENS, toAnthropicRequest } from './request.ts'
export { type OpenAIToolCall, fromAnthropicResponse } from './response.ts'
export { type ServerSentEvent, type StreamInit, anthropicStreamToOpenAI } from './stream.ts'
