import { asRecord } from './messages.ts'

/** OpenAI's `finish_reason` values that an Anthropic answer can end with. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter'

/** OpenAI's `usage` object. */
export interface OpenAIUsage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  prompt_tokens_details: { cached_tokens: number }
}

/**
 * Anthropic `stop_reason` -> OpenAI `finish_reason`.
 * `pause_turn` (a server-tool loop hit its limit) still ends this response
 * normally, so it is `stop`; `model_context_window_exceeded` is a truncation like
 * `max_tokens`. Unknown or missing reasons become `stop` so new Anthropic values
 * never break a response that otherwise arrived whole.
 */
export function finishReasonFor (stopReason: unknown): FinishReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length'
    case 'tool_use':
      return 'tool_calls'
    case 'refusal':
      return 'content_filter'
    default:
      return 'stop'
  }
}

/** Anthropic's token counts, as far as they are known. */
export interface AnthropicTokenCounts {
  /** input_tokens + cache_read_input_tokens + cache_creation_input_tokens. */
  prompt: number
  /** cache_read_input_tokens alone. */
  cached: number
  completion: number
}

/**
 * Reads an Anthropic `usage` object. Anthropic counts cached prompt tokens apart
 * from `input_tokens`; OpenAI's `prompt_tokens` includes them, so they are added.
 * Fields that are absent come back undefined so a later, partial usage (a stream's
 * message_delta) does not erase an earlier full one.
 */
export function readAnthropicUsage (usage: unknown): Partial<AnthropicTokenCounts> {
  const record = asRecord(usage) ?? {}
  const count = (name: string): number | undefined => {
    const value = record[name]
    return typeof value === 'number' && Number.isFinite(value) ? value : undefined
  }
  const input = count('input_tokens')
  const cacheRead = count('cache_read_input_tokens')
  const cacheCreation = count('cache_creation_input_tokens')
  const counts: Partial<AnthropicTokenCounts> = {}
  if (input !== undefined || cacheRead !== undefined || cacheCreation !== undefined) {
    counts.prompt = (input ?? 0) + (cacheRead ?? 0) + (cacheCreation ?? 0)
    counts.cached = cacheRead ?? 0
  }
  const output = count('output_tokens')
  if (output !== undefined) counts.completion = output
  return counts
}

/** Token counts -> OpenAI `usage`. */
export function toOpenAIUsage (counts: Partial<AnthropicTokenCounts>): OpenAIUsage {
  const prompt = counts.prompt ?? 0
  const completion = counts.completion ?? 0
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: counts.cached ?? 0 },
  }
}
