/**
 * @switchboard/providers — upstream adapters. Each turns one attempt (a chat.completions body, a
 * model, a key) into one HTTP call on a keep-alive undici pool, and its answer into an
 * OpenAI-shaped success (JSON or a stream of chunks) or a normalized failure.
 */
import { createAnthropicAdapter } from './anthropic/adapter.ts'
import { createAzureAdapter } from './azure/adapter.ts'
import { createBedrockAdapter } from './bedrock/adapter.ts'
import { createGoogleAdapter } from './google/adapter.ts'
import { createOpenAiAdapter } from './openai/adapter.ts'
import type { ProviderAdapter, ProviderInit, ProviderType } from './types.ts'

export type * from './types.ts'
export { PROVIDER_TYPES } from './types.ts'
export { cancelledFailure, timeoutFailure } from './errors/classify.ts'
export { StreamFailure, streamFailureOf } from './http/stream-failure.ts'
export { Cancellation } from './http/cancellation.ts'
export type { RateLimitExhaustion } from './http/rate-limit.ts'
export { parseServiceAccount } from './google/tokens.ts'
export { StreamUsage } from './usage.ts'
export { canServe, speaksNatively, sendSurface, estimateInputTokens } from './surfaces/index.ts'
export { carriesContent, leadingType, type StreamFormat } from './streams/content.ts'
export { readSent, continuationBody, ContinuationSplicer } from './streams/continuation.ts'

const ADAPTERS: Record<ProviderType, (init: ProviderInit, now: () => number) => ProviderAdapter> = {
  openai: createOpenAiAdapter,
  azure: createAzureAdapter,
  anthropic: createAnthropicAdapter,
  bedrock: createBedrockAdapter,
  gemini: createGoogleAdapter,
  vertex: createGoogleAdapter,
}

/** Creates the adapter for a provider's base wire format. */
export function createProvider(init: ProviderInit, now: () => number = Date.now): ProviderAdapter {
  return ADAPTERS[init.type](init, now)
}
