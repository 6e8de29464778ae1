/**
 * ConverseStream events -> OpenAI chat.completion.chunk JSON texts (never `[DONE]`): the role at
 * messageStart, text and tool-call deltas (calls numbered 0, 1, ... in their own order), the
 * finish at messageStop, usage at metadata. An exception frame throws UpstreamStreamError with
 * Bedrock's type as its code; a stream that ends before messageStop is `upstream_malformed`.
 */
import { TranslationError } from '../anthropic/errors.ts'
import { finishReasonFor, readAnthropicUsage, toOpenAIUsage } from '../anthropic/finish.ts'
import { asRecord } from '../anthropic/messages.ts'
import { chunkWriter, type StreamChunkInit } from '../http/chunks.ts'
import { UpstreamStreamError } from '../http/stream-failure.ts'
import { anthropicStopReason, anthropicUsage } from './converse.ts'
import type { StreamFrame } from './eventstream.ts'

export async function* converseStreamToOpenAI(frames: AsyncIterable<StreamFrame>, init: StreamChunkInit): AsyncGenerator<string> {
  const writer = chunkWriter(init.id, init.model, init.createdSeconds)
  const delta = writer.delta
  const toolIndexByBlock = new Map<number, number>()
  let started = false
  let stopped = false
  let usageSent = false
  for await (const frame of frames) {
    if (frame.messageType !== 'event') {
      const message = typeof frame.payload.message === 'string' ? frame.payload.message : frame.errorMessage ?? 'no message given'
      throw new UpstreamStreamError(message, frame.type || 'unknown_exception')
    }
    const payload = frame.payload
    switch (frame.type) {
      case 'messageStart':
        started = true
        yield delta({ role: 'assistant', content: '' })
        break
      case 'contentBlockStart': {
        const toolUse = asRecord(asRecord(payload.start)?.toolUse)
        const block = payload.contentBlockIndex
        if (toolUse !== undefined && typeof block === 'number') {
          const index = toolIndexByBlock.size
          toolIndexByBlock.set(block, index)
          yield delta({ tool_calls: [{ index, id: toolUse.toolUseId, type: 'function', function: { name: toolUse.name, arguments: '' } }] })
        }
        break
      }
      case 'contentBlockDelta': {
        const change = asRecord(payload.delta)
        if (typeof change?.text === 'string' && change.text !== '') {
          yield delta({ content: change.text })
          break
        }
        const toolUse = asRecord(change?.toolUse)
        if (typeof toolUse?.input === 'string' && toolUse.input !== '') {
          const index = typeof payload.contentBlockIndex === 'number' ? toolIndexByBlock.get(payload.contentBlockIndex) : undefined
          if (index === undefined) throw malformed('a toolUse delta for a block that did not start as a tool use')
          yield delta({ tool_calls: [{ index, function: { arguments: toolUse.input } }] })
        }
        break
      }
      case 'messageStop': {
        if (!started) throw malformed('messageStop arrived before messageStart')
        stopped = true
        yield delta({}, finishReasonFor(anthropicStopReason(payload.stopReason)))
        break
      }
      case 'metadata':
        usageSent = true
        yield writer.usage(toOpenAIUsage(readAnthropicUsage(anthropicUsage(payload.usage))))
        break
      // contentBlockStop and event types added later carry nothing a chat chunk has a field for.
    }
  }
  if (!stopped) throw malformed(started ? 'the stream ended before messageStop' : 'the stream ended before messageStart')
  if (!usageSent) yield writer.usage(toOpenAIUsage({}))
}

function malformed(what: string): TranslationError {
  return new TranslationError('upstream_malformed', `Bedrock's ConverseStream is malformed: ${what}.`)
}
