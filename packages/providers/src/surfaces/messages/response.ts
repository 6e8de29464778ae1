/** OpenAI chat.completion -> Anthropic Messages `message` (non-streaming). Pure. */
import { asRecord, chatUsage, newId, parseArguments, toolCallPieces } from '../shared.ts'

/** Anthropic's stop reason for a chat finish reason. */
export function stopReasonOf(finish: unknown): string {
  return (typeof finish === 'string' ? STOP_REASONS.get(finish) : undefined) ?? 'end_turn'
}

const STOP_REASONS = new Map([['length', 'max_tokens'], ['tool_calls', 'tool_use'], ['function_call', 'tool_use'], ['content_filter', 'refusal']])

/** Anthropic `usage` from chat usage counts (cache reads apart from the input, as Anthropic counts them). */
export function messageUsage(usage: ReturnType<typeof chatUsage>): Record<string, number> {
  return { input_tokens: usage.promptTokens - usage.cachedTokens, output_tokens: usage.completionTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cachedTokens }
}

/** Translates a chat completion body into a Messages `message`; `model` is what the caller asked for. */
export function chatToMessage(chat: Record<string, unknown>, model: string): Record<string, unknown> {
  const choice = asRecord((Array.isArray(chat.choices) ? chat.choices : [])[0])
  const message = asRecord(choice?.message)
  const content: Record<string, unknown>[] = []
  const reasoning = message?.reasoning_content ?? message?.reasoning
  if (typeof reasoning === 'string' && reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' })
  if (typeof message?.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content })
  const calls = toolCallPieces(message)
  for (const { id, name, piece } of calls) content.push({ type: 'tool_use', id: String(id ?? newId('toolu_')), name: String(name ?? ''), input: parseArguments(String(piece ?? '')) })
  return {
    id: typeof chat.id === 'string' ? `msg_${chat.id.replace(/^chatcmpl-/, '')}` : newId('msg_'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: calls.length > 0 ? 'tool_use' : stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: messageUsage(chatUsage(chat.usage)),
  }
}
