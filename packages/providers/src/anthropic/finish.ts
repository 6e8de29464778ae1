import type { TokenUsage } from '@switchboard/routing'
import { asRecord } from './messages.ts'

/** OpenAI's `finish_reason` values that an Anthropic answer can end with. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter'

/** OpenAI's `usage` object, as toOpenAIUsage writes it. */
export type OpenAIUsage = ReturnType<typeof toOpenAIUsage>

/** Anthropic `stop_reason` -> OpenAI `finish_reason`; `pause_turn` and unknown reasons are `stop`, never breaking a whole answer. */
export function finishReasonFor (stopReason: unknown): FinishReason {
  return (typeof stopReason === 'string' ? FINISH_REASONS.get(stopReason) : undefined) ?? 'stop'
}

const FINISH_REASONS = new Map<string, FinishReason>([['max_tokens', 'length'], ['model_context_window_exceeded', 'length'], ['tool_use', 'tool_calls'], ['refusal', 'content_filter']])

/** Token counts as the translations carry them, in OpenAI's sense: the prompt includes the cached tokens. */
export interface TokenCounts extends TokenUsage {
  /** Anthropic's cache_read_input_tokens alone (its `promptTokens` are input + cache reads + cache writes). */
  cachedTokens: number
  /** Reasoning tokens, inside `completionTokens` (OpenAI's `completion_tokens_details`); Anthropic states none. */
  reasoningTokens?: number
}

/**
 * Reads an Anthropic `usage` object, cached prompt tokens added to the prompt (as OpenAI counts
 * them). Absent fields stay undefined, so a later partial usage (message_delta) erases nothing.
 */
export function readAnthropicUsage (usage: unknown): Partial<TokenCounts> {
  const record = asRecord(usage) ?? {}
  const count = (name: string): number | undefined => (Number.isFinite(record[name]) ? record[name] as number : undefined)
  const input = count('input_tokens')
  const cacheRead = count('cache_read_input_tokens')
  const cacheCreation = count('cache_creation_input_tokens')
  const counts: Partial<TokenCounts> = {}
  if (input !== undefined || cacheRead !== undefined || cacheCreation !== undefined) {
    counts.promptTokens = (input ?? 0) + (cacheRead ?? 0) + (cacheCreation ?? 0)
    counts.cachedTokens = cacheRead ?? 0
  }
  const output = count('output_tokens')
  if (output !== undefined) counts.completionTokens = output
  return counts
}

/** Token counts -> OpenAI `usage`. */
export function toOpenAIUsage (counts: Partial<TokenCounts>) {
  const prompt = counts.promptTokens ?? 0
  const completion = counts.completionTokens ?? 0
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: counts.cachedTokens ?? 0 } }
}
