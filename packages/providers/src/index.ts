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
export { classifyFailure, networkFailure, timeoutFailure, cancelledFailure, parseWaitHint } from './errors/index.ts'
export { UpstreamStreamError } from './http/openai-stream.ts'
export { StreamFailure, streamFailureOf, normalizedEvents, jsonBytes, jsonBody, streamOf, malformedSuccess, notSent, isCallerTranslationError } from './outcome.ts'
export { Cancellation } from './http/cancellation.ts'
export { readRateLimitExhaustion, type RateLimitExhaustion } from './http/rate-limit.ts'
export { TranslationError, AnthropicStreamError } from './anthropic/index.ts'
export { DEFAULT_AZURE_API_VERSION } from './azure/adapter.ts'
export { DEFAULT_BEDROCK_REGION, bedrockRuntimeUrl } from './bedrock/adapter.ts'
export { GEMINI_API_URL, vertexUrl } from './google/adapter.ts'
export { parseServiceAccount } from './google/tokens.ts'
export { readUsage, usageOf, StreamUsage } from './usage.ts'

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
export { canServe, speaksNatively, sendSurface, estimateInputTokens } from './surfaces/index.ts'
export { carriesContent, leadingType, type StreamFormat } from './streams/content.ts'
export { readSent, continuationBody, ContinuationSplicer, type SentSoFar } from './streams/continuation.ts'
