/** Translation between OpenAI chat.completions and Anthropic's Messages API: pure functions, no I/O. */
export { TranslationError } from './errors.ts'
export { toAnthropicRequest } from './request.ts'
export { fromAnthropicResponse } from './response.ts'
export { anthropicStreamToOpenAI } from './stream.ts'
