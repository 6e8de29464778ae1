/**
 * Translation between OpenAI chat.completions and Anthropic's Messages API:
 * pure functions, no I/O. The Anthropic adapter sends what `toAnthropicRequest`
 * builds and hands back what `fromAnthropicResponse` / `anthropicStreamToOpenAI`
 * make of the answer, so callers only ever see OpenAI shapes.
 */
export { AnthropicStreamError, TranslationError } from './errors.ts'
export { toAnthropicRequest } from './request.ts'
export { fromAnthropicResponse } from './response.ts'
export { anthropicStreamToOpenAI } from './stream.ts'
