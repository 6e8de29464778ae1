/**
 * ConverseStream events -> OpenAI chat.completion.chunk JSON texts (never `[DONE]`), read as the
 * Messages events they match (the same translation as Anthropic's stream): messageStart,
 * contentBlockStart of a tool use, text and tool-input deltas, the finish at messageStop, usage at
 * metadata (its chunk at the end). An exception frame throws UpstreamStreamError with Bedrock's
 * type as its code; a stream that ends before messageStop is `upstream_malformed`.
 */
import { MessagesToChunks } from '../anthropic/stream.ts'
import { asRecord } from '../anthropic/messages.ts'
import type { StreamChunkInit } from '../http/chunks.ts'
import { UpstreamStreamError } from '../http/stream-failure.ts'
import { anthropicStopReason, anthropicUsage } from './converse.ts'
import type { StreamFrame } from './eventstream.ts'

export async function* converseStreamToOpenAI(frames: AsyncIterable<StreamFrame>, init: StreamChunkInit): AsyncGenerator<string> {
  const translation = new MessagesToChunks(init, "Bedrock's ConverseStream")
  let stopped = false
  for await (const frame of frames) {
    if (frame.messageType !== 'event') {
      const message = typeof frame.payload.message === 'string' ? frame.payload.message : frame.errorMessage ?? 'no message given'
      throw new UpstreamStreamError(message, frame.type || 'unknown_exception')
    }
    const event = messagesEvent(frame.type, frame.payload, init.id)
    if (event !== undefined) for (const chunk of translation.read(...event)) yield chunk
    if (frame.type === 'messageStop') stopped = true
  }
  // Usage comes after messageStop (in metadata): the answer ends with the stream.
  if (stopped) yield* translation.read('message_stop', {})
  translation.end()
}

/** A ConverseStream event as the Messages event it matches; undefined for contentBlockStop and types added later. */
function messagesEvent(type: string, payload: Record<string, unknown>, id: string): [string, Record<string, unknown>] | undefined {
  const index = payload.contentBlockIndex
  switch (type) {
    case 'messageStart':
      return ['message_start', { message: { id } }]
    case 'contentBlockStart': {
      const toolUse = asRecord(asRecord(payload.start)?.toolUse)
      return toolUse === undefined ? undefined : ['content_block_start', { index, content_block: { type: 'tool_use', id: toolUse.toolUseId, name: toolUse.name } }]
    }
    case 'contentBlockDelta': {
      const delta = asRecord(payload.delta)
      if (typeof delta?.text === 'string') return ['content_block_delta', { index, delta: { type: 'text_delta', text: delta.text } }]
      return ['content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: asRecord(delta?.toolUse)?.input } }]
    }
    case 'messageStop':
      return ['message_delta', { delta: { stop_reason: anthropicStopReason(payload.stopReason) ?? 'end_turn' } }]
    case 'metadata':
      return ['message_delta', { usage: anthropicUsage(payload.usage) }]
  }
  return undefined
}
