/**
 * streamGenerateContent (`alt=sse`) -> OpenAI chat.completion.chunk JSON texts (never `[DONE]`).
 * Each event holds the next parts (a function call arrives whole); the one with a finishReason
 * gives the finish chunk, the last usageMetadata the usage chunk. An in-band error throws
 * UpstreamStreamError with Google's status; no finishReason is `upstream_malformed`.
 */
import { TranslationError } from '../anthropic/errors.ts'
import { asRecord } from '../anthropic/messages.ts'
import type { SseMessage } from '../http/sse.ts'
import { chunkWriter, type StreamChunkInit } from '../http/chunks.ts'
import { UpstreamStreamError } from '../http/stream-failure.ts'
import { finishReasonOf, readParts, usageOf } from './generate.ts'

export async function* geminiStreamToOpenAI(events: AsyncIterable<SseMessage>, init: StreamChunkInit): AsyncGenerator<string> {
  const writer = chunkWriter(init.id, init.model, init.createdSeconds)
  const delta = writer.delta
  let started = false
  let finished = false
  let calls = 0
  let usage: unknown
  for await (const { data } of events) {
    let parsed: unknown
    try {
      parsed = JSON.parse(data)
    } catch {
      throw new TranslationError('upstream_malformed', `Gemini's stream is malformed: an event's data is not JSON: ${data.slice(0, 200)}.`)
    }
    const record = asRecord(parsed)
    const error = asRecord(record?.error)
    if (error !== undefined) throw new UpstreamStreamError(typeof error.message === 'string' ? error.message : 'no message given', typeof error.status === 'string' ? error.status : String(error.code ?? 'unknown'))
    if (!started) {
      started = true
      yield delta({ role: 'assistant', content: '' })
    }
    if (record?.usageMetadata !== undefined) usage = record.usageMetadata
    const candidate = asRecord(Array.isArray(record?.candidates) ? record.candidates[0] : undefined)
    const { text, toolCalls } = readParts(asRecord(candidate?.content)?.parts, (index) => `call_${init.id}_${calls + index}`)
    if (text !== '') yield delta({ content: text })
    if (toolCalls.length > 0) {
      yield delta({ tool_calls: toolCalls.map((call, index) => ({ index: calls + index, ...call })) })
      calls += toolCalls.length
    }
    const blocked = candidate === undefined && asRecord(record?.promptFeedback)?.blockReason !== undefined
    if ((candidate?.finishReason !== undefined || blocked) && !finished) {
      finished = true
      yield delta({}, blocked ? 'content_filter' : finishReasonOf(candidate!.finishReason, calls > 0))
    }
  }
  if (!finished) throw new TranslationError('upstream_malformed', `Gemini's stream is malformed: ${started ? 'it ended with no finishReason' : 'it ended before any answer'}.`)
  yield writer.usage(usageOf(usage))
}
