import { TranslationError } from './errors.ts'
import { type FinishReason, finishReasonFor, type OpenAIUsage, readAnthropicUsage, toOpenAIUsage } from './finish.ts'
import { asRecord } from './messages.ts'

/**
 * Anthropic Message -> OpenAI chat.completion, reported for `model` (what the caller asked for).
 * Text blocks are joined without a separator (Anthropic splits one answer around tool calls and
 * citations); thinking and server-tool blocks have no place in OpenAI's message and are left out.
 */
export function fromAnthropicResponse (message: unknown, model: string, createdSeconds: number): Record<string, unknown> {
  const record = asRecord(message)
  if (typeof record?.id !== 'string' || !Array.isArray(record.content)) throw new TranslationError('upstream_malformed', 'Anthropic answered with a body that is not a Message (no id or content).')
  const texts: string[] = []
  const toolCalls: Array<Record<string, unknown>> = []
  for (const entry of record.content as unknown[]) {
    const block = asRecord(entry)
    if (block?.type === 'text' && typeof block.text === 'string') texts.push(block.text)
    else if (block?.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } })
    }
  }
  const content = texts.length === 0 ? null : texts.join('')
  return chatCompletion(record.id, model, createdSeconds, content, toolCalls, finishReasonFor(record.stop_reason), toOpenAIUsage(readAnthropicUsage(record.usage)))
}

/** A chat.completion with one choice: the assistant's `content` and tool calls. */
export function chatCompletion (id: string, model: string, createdSeconds: number, content: string | null, toolCalls: unknown[], finishReason: FinishReason, usage: OpenAIUsage): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content, refusal: null }
  if (toolCalls.length > 0) message.tool_calls = toolCalls
  return { id, object: 'chat.completion', created: createdSeconds, model, choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }], usage }
}
