import { chunkWriter, type ChunkWriter, type StreamChunkInit } from '../http/chunks.ts'
import type { SseMessage } from '../http/sse.ts'
import { UpstreamStreamError } from '../http/stream-failure.ts'
import { TranslationError } from './errors.ts'
import { type TokenCounts, finishReasonFor, readAnthropicUsage, toOpenAIUsage } from './finish.ts'
import { asRecord, parseObject } from './messages.ts'

/**
 * Anthropic Messages stream -> the JSON text of each OpenAI chat.completion.chunk (never
 * `[DONE]`), through MessagesToChunks. Throws `upstream_malformed` on data that is not a JSON
 * object, and on a stream that ends without message_stop: a cut-off answer is never passed off as complete.
 */
export async function * anthropicStreamToOpenAI (events: AsyncIterable<SseMessage>, init: Omit<StreamChunkInit, 'id'>): AsyncGenerator<string> {
  const translation = new MessagesToChunks(init, 'Anthropic stream')
  for await (const { event, data } of events) {
    const payload = parseObject(data)
    if (payload === undefined) throw new TranslationError('upstream_malformed', `Anthropic stream is malformed: an event's data is not a JSON object: ${data.slice(0, 200)}.`)
    for (const chunk of translation.read(typeof payload.type === 'string' ? payload.type : event, payload)) yield chunk
    if (translation.stopped) return
  }
  translation.end()
}

/**
 * The chat chunks of a Messages stream, event by event (also Bedrock's ConverseStream, read as
 * Messages events): the role at message_start, content and tool-call deltas (calls numbered by
 * their own order, as OpenAI clients assemble them), the finish at message_delta, and the usage
 * chunk at message_stop, always (the gateway needs the counts). Thinking, `ping` and unknown
 * events are skipped; an `error` event throws UpstreamStreamError (`error.type` as its code).
 */
export class MessagesToChunks {
  /** The answer's id is the message's, known at message_start. */
  private writer: ChunkWriter | undefined
  private counts: Partial<TokenCounts> = {}
  private finished = false
  private readonly toolIndexByBlock = new Map<number, number>()
  /** True once message_stop came: the answer is whole. */
  stopped = false

  constructor (private readonly init: Omit<StreamChunkInit, 'id'>, private readonly source: string) {}

  /** The chunk texts of one event of `type`. */
  read (type: string | undefined, payload: Record<string, unknown>): string[] {
    if (type === 'ping') return []
    if (type === 'error') {
      const error = asRecord(payload.error)
      throw new UpstreamStreamError(typeof error?.message === 'string' ? error.message : 'no message given', typeof error?.type === 'string' ? error.type : 'unknown_error')
    }
    if (type === 'message_start') {
      const message = asRecord(payload.message)
      if (typeof message?.id !== 'string') throw this.malformed('message_start carries no message id')
      this.writer = chunkWriter(message.id, this.init.model, this.init.createdSeconds)
      this.counts = readAnthropicUsage(message.usage)
      return [this.writer.delta({ role: 'assistant', content: '' })]
    }
    const writer = this.writer
    if (writer === undefined) throw this.malformed(`${type ?? 'an unnamed event'} arrived before message_start`)
    switch (type) {
      case 'content_block_start': {
        const block = asRecord(payload.content_block)
        if (block?.type === 'text' && typeof block.text === 'string' && block.text !== '') return [writer.delta({ content: block.text })]
        if (block?.type !== 'tool_use' || typeof payload.index !== 'number') return []
        const toolIndex = this.toolIndexByBlock.size
        this.toolIndexByBlock.set(payload.index, toolIndex)
        return [writer.delta({ tool_calls: [{ index: toolIndex, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] })]
      }
      case 'content_block_delta': {
        const delta = asRecord(payload.delta)
        if (delta?.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '') return [writer.delta({ content: delta.text })]
        if (delta?.type !== 'input_json_delta' || typeof delta.partial_json !== 'string' || delta.partial_json === '') return []
        const toolIndex = typeof payload.index === 'number' ? this.toolIndexByBlock.get(payload.index) : undefined
        if (toolIndex === undefined) throw this.malformed('input_json_delta for a block that is not a tool_use')
        return [writer.delta({ tool_calls: [{ index: toolIndex, function: { arguments: delta.partial_json } }] })]
      }
      case 'message_delta': {
        // message_delta usage is cumulative; whatever it states replaces message_start's figure.
        this.counts = { ...this.counts, ...readAnthropicUsage(payload.usage) }
        const stopReason = asRecord(payload.delta)?.stop_reason
        if (stopReason === undefined || stopReason === null || this.finished) return []
        this.finished = true
        return [writer.delta({}, finishReasonFor(stopReason))]
      }
      case 'message_stop': {
        this.stopped = true
        const usage = writer.usage(toOpenAIUsage(this.counts))
        return this.finished ? [usage] : [writer.delta({}, 'stop'), usage]
      }
    }
    return []
  }

  /** The stream ended: throws unless message_stop came. */
  end (): void {
    if (!this.stopped) throw this.malformed(this.writer === undefined ? 'the stream ended before message_start' : 'the stream ended before message_stop')
  }

  private malformed (what: string): TranslationError {
    return new TranslationError('upstream_malformed', `${this.source} is malformed: ${what}.`)
  }
}
