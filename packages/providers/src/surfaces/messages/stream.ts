/**
 * OpenAI chat.completion.chunk stream -> Anthropic Messages stream events (each event's JSON
 * `data`, named by its `type`), in Anthropic's order: message_start, ping, per block its start,
 * deltas and stop, message_delta with the stop reason and usage, message_stop.
 */
import { TranslationError } from '../../anthropic/errors.ts'
import { asRecord, chatUsage, newId, parseChunk, toolCallPieces } from '../shared.ts'
import { messageUsage, stopReasonOf } from './response.ts'

type Block = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; callIndex: number }

/** Translates the chunks of one chat stream; `model` is what the caller asked for. */
export async function* chatStreamToMessageEvents(chunks: AsyncIterable<string>, model: string): AsyncGenerator<string> {
  const id = newId('msg_')
  let started = false
  let open = null as Block | null
  let index = -1
  let finish: unknown = null
  let sawToolCall = false
  let usage: ReturnType<typeof chatUsage> | null = null
  /** Closes the open block, if any, and opens `next` with its content_block start. */
  function* openBlock(next: Block, contentBlock: Record<string, unknown>): Generator<string> {
    if (open !== null) yield JSON.stringify({ type: 'content_block_stop', index })
    open = next
    index++
    yield JSON.stringify({ type: 'content_block_start', index, content_block: contentBlock })
  }
  for await (const text of chunks) {
    const chunk = parseChunk(text)
    if (chunk === undefined) continue
    if (!started) {
      started = true
      const message = { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } }
      yield JSON.stringify({ type: 'message_start', message })
      yield '{"type":"ping"}'
    }
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chatUsage(chunk.usage)
    const choice = asRecord((Array.isArray(chunk.choices) ? chunk.choices : [])[0])
    if (choice === undefined) continue
    const delta = asRecord(choice.delta)
    const reasoning = delta?.reasoning_content ?? delta?.reasoning
    if (typeof reasoning === 'string' && reasoning !== '') {
      if (open?.kind !== 'thinking') yield* openBlock({ kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' })
      yield JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: reasoning } })
    }
    const content = delta?.content
    if (typeof content === 'string' && content !== '') {
      if (open?.kind !== 'text') yield* openBlock({ kind: 'text' }, { type: 'text', text: '' })
      yield JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: content } })
    }
    for (const { callIndex, id, name, piece } of toolCallPieces(delta)) {
      if (open?.kind !== 'tool' || open.callIndex !== callIndex) {
        sawToolCall = true
        yield* openBlock({ kind: 'tool', callIndex }, { type: 'tool_use', id: String(id ?? newId('toolu_')), name: String(name ?? ''), input: {} })
      }
      if (typeof piece === 'string' && piece !== '') yield JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } })
    }
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) finish = choice.finish_reason
  }
  if (!started) throw new TranslationError('upstream_malformed', 'The upstream stream ended before its first chunk.')
  if (open !== null) yield JSON.stringify({ type: 'content_block_stop', index })
  const stopReason = sawToolCall && (finish === 'tool_calls' || finish === 'stop' || finish === null) ? 'tool_use' : stopReasonOf(finish)
  yield JSON.stringify({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: messageUsage(usage ?? chatUsage(undefined)) })
  yield '{"type":"message_stop"}'
}
