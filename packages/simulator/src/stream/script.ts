/**
 * How a streamed answer goes on the wire, event by event, and the ways a provider breaks one
 * inside it (issue 35): a slow first token, a cut, a stall with the socket open, a malformed
 * event, an end without the closing events. Each event of a dialect's stream is read as
 * preamble (before any content: a role-only chunk, `message_start`, `response.created`),
 * content (text or a tool call's arguments) or ending (a finish reason, `[DONE]`,
 * `message_stop`, `response.completed`, usage), whatever the dialect.
 */

/** What one event of a stream is. */
export type StreamEventKind = 'preamble' | 'content' | 'ending'

const ENDING_MARKERS = ['data: [DONE]', '"finish_reason":"', '"usage":{"prompt_tokens"', 'content_block_stop', 'message_delta', 'message_stop', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.function_call_arguments.done', 'response.completed', 'response.incomplete', '"finishReason"']
const CONTENT = /"content":"[^"]|"arguments":"[^"]|content_block_delta|response\.output_text\.delta|response\.function_call_arguments\.delta|"text":"[^"]/
const BEDROCK_ENDING = ['contentBlockStop', 'messageStop', 'metadata']

/** Reads one event as it goes on the wire (SSE text, or a Bedrock event-stream frame). */
export function eventKind(chunk: string | Buffer): StreamEventKind {
  if (typeof chunk !== 'string') {
    if (chunk.includes('contentBlockDelta')) return 'content'
    return BEDROCK_ENDING.some((marker) => chunk.includes(marker)) ? 'ending' : 'preamble'
  }
  if (ENDING_MARKERS.some((marker) => chunk.includes(marker))) return 'ending'
  return CONTENT.test(chunk) ? 'content' : 'preamble'
}

/** How the events of one stream go out. */
export interface StreamScript {
  /** How many events go out before the stream ends as `ending` says. */
  sent: number
  ending: 'end' | 'destroy' | 'hold'
  /** For `hold`: destroy the socket after this long; undefined holds until the client leaves. */
  holdMs: number | undefined
}

/** The index just past the `count`-th content event (all of the preamble before it included); the stream's length when it has fewer. */
export function afterContent(chunks: ReadonlyArray<string | Buffer>, count: number): number {
  let seen = 0
  for (let index = 0; index < chunks.length; index++) {
    if (eventKind(chunks[index]!) !== 'content') continue
    if (seen === count) return index
    seen++
  }
  // Fewer content events than asked: up to the first ending.
  const ending = chunks.findIndex((chunk) => eventKind(chunk) === 'ending')
  return ending < 0 ? chunks.length : ending
}

/** An event cut in the middle of its JSON, still framed as an event: what a malformed chunk looks like. */
export function malformed(chunk: string | Buffer): string | Buffer {
  if (typeof chunk !== 'string') return chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2)))
  const data = chunk.lastIndexOf('data: ')
  if (data < 0) return chunk
  const end = chunk.indexOf('\n', data)
  const json = chunk.slice(data + 6, end < 0 ? chunk.length : end)
  return `${chunk.slice(0, data)}data: ${json.slice(0, Math.max(1, Math.floor(json.length / 2)))}\n\n`
}
