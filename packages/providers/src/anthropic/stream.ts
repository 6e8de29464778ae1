import { chunkWriter, type ChunkWriter, type StreamChunkInit } from '../http/chunks.ts'
import type { SseMessage } from '../http/sse.ts'
import { UpstreamStreamError } from '../http/stream-failure.ts'
import { TranslationError } from './errors.ts'
import { type TokenCounts, finishReasonFor, readAnthropicUsage, toOpenAIUsage } from './finish.ts'
import { asRecord } from './messages.ts'

/**
 * Anthropic Messages stream -> the JSON text of each OpenAI chat.completion.chunk (never
 * `[DONE]`): the role at message_start, content and tool-call deltas (calls numbered by their own
 * order, as OpenAI clients assemble them), the finish at message_delta, and the usage chunk at
 * message_stop, always (the gateway needs the counts). Thinking, `ping` and unknown events are
 * skipped. Throws UpstreamStreamError (`error.type` as its code) on an `error` event, and
 * `upstream_malformed` on bad data or a stream that ends without message_stop: a cut-off answer
 * is never passed off as complete.
 */
export async function * anthropicStreamToOpenAI (events: AsyncIterable<SseMessage>, init: Omit<StreamChunkInit, 'id'>): AsyncGenerator<string> {
  // The answer's id is the message's, known at message_start.
  let writer: ChunkWriter | undefined
  let counts: Partial<TokenCounts> = {}
  let finished = false
  const toolIndexByBlock = new Map<number, number>()
  const deltaChunk = (delta: Record<string, unknown>, finishReason?: string | null): string => writer!.delta(delta, finishReason)

  for await (const { event, data } of events) {
    const payload = parseEventData(data)
    const type = typeof payload.type === 'string' ? payload.type : event
    if (type === 'ping') continue
    if (type === 'error') {
      const error = asRecord(payload.error)
      throw new UpstreamStreamError(typeof error?.message === 'string' ? error.message : 'no message given', typeof error?.type === 'string' ? error.type : 'unknown_error')
    }
    if (type === 'message_start') {
      const message = asRecord(payload.message)
      if (typeof message?.id !== 'string') throw malformed('message_start carries no message id')
      writer = chunkWriter(message.id, init.model, init.createdSeconds)
      counts = readAnthropicUsage(message.usage)
      yield deltaChunk({ role: 'assistant', content: '' })
      continue
    }
    if (writer === undefined) throw malformed(`${type ?? 'an unnamed event'} arrived before message_start`)

    switch (type) {
      case 'content_block_start': {
        const block = asRecord(payload.content_block)
        if (block?.type === 'text' && typeof block.text === 'string' && block.text !== '') {
          yield deltaChunk({ content: block.text })
        } else if (block?.type === 'tool_use' && typeof payload.index === 'number') {
          const toolIndex = toolIndexByBlock.size
          toolIndexByBlock.set(payload.index, toolIndex)
          yield deltaChunk({
            tool_calls: [{ index: toolIndex, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }],
          })
        }
        break
      }
      case 'content_block_delta': {
        const delta = asRecord(payload.delta)
        if (delta?.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '') {
          yield deltaChunk({ content: delta.text })
        } else if (delta?.type === 'input_json_delta' && typeof delta.partial_json === 'string' && delta.partial_json !== '') {
          const toolIndex = typeof payload.index === 'number' ? toolIndexByBlock.get(payload.index) : undefined
          if (toolIndex === undefined) throw malformed('input_json_delta for a block that is not a tool_use')
          yield deltaChunk({ tool_calls: [{ index: toolIndex, function: { arguments: delta.partial_json } }] })
        }
        break
      }
      case 'message_delta': {
        // message_delta usage is cumulative; whatever it states replaces message_start's figure.
        counts = { ...counts, ...readAnthropicUsage(payload.usage) }
        const stopReason = asRecord(payload.delta)?.stop_reason
        if (stopReason !== undefined && stopReason !== null && !finished) {
          finished = true
          yield deltaChunk({}, finishReasonFor(stopReason))
        }
        break
      }
      case 'message_stop':
        if (!finished) yield deltaChunk({}, 'stop')
        yield writer.usage(toOpenAIUsage(counts))
        return
    }
  }
  throw malformed(writer === undefined ? 'the stream ended before message_start' : 'the stream ended before message_stop')
}

function parseEventData (data: string): Record<string, unknown> {
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch {
    throw malformed(`an event's data is not JSON: ${data.slice(0, 200)}`)
  }
  const record = asRecord(parsed)
  if (record === undefined) throw malformed(`an event's data is not a JSON object: ${data.slice(0, 200)}`)
  return record
}

function malformed (what: string): TranslationError {
  return new TranslationError('upstream_malformed', `Anthropic stream is malformed: ${what}.`)
}
