/**
 * Which stream events carry the answer itself, per format. What comes before the first one (a
 * role-only chunk, `message_start`, `ping`, `response.created`) is preamble: a stream failing
 * during it told the caller nothing, so the gateway can still fail over (issue 35).
 */
import { parseObject } from '../anthropic/messages.ts'

/** The event formats of a stream: chat chunks, Anthropic Messages events, Responses events. */
export type StreamFormat = 'chat' | 'messages' | 'responses'

const MESSAGES_PREAMBLE = new Set(['message_start', 'ping'])
const RESPONSES_PREAMBLE = new Set(['response.created', 'response.in_progress', 'response.queued', 'response.output_item.added', 'response.content_part.added'])

const TYPE_PREFIX = '{"type":"'

/** An event's `type` read in place when it is the data's first field, as providers send it; undefined otherwise. */
export function leadingType(data: string): string | undefined {
  if (!data.startsWith(TYPE_PREFIX)) return undefined
  const end = data.indexOf('"', TYPE_PREFIX.length)
  return end > TYPE_PREFIX.length ? data.slice(TYPE_PREFIX.length, end) : undefined
}
/** Chat chunk text that can only be content (a non-empty text, a call, the end); checked before any parse. */
const CHAT_CONTENT = /"content":"[^"]|"tool_calls":\[\{|"finish_reason":"|"usage":\{|"refusal":"[^"]/
/** Chat fields that may carry content a plain text check cannot judge: those chunks are parsed. */
const CHAT_UNSURE = /"reasoning|"audio"|"function_call"/

/** True when the event `data` carries content, a tool call, or the answer's end: judged from its text, unusual ones parsed. */
export function carriesContent(format: StreamFormat, data: string): boolean {
  if (format === 'chat') {
    if (CHAT_CONTENT.test(data)) return true
    if (!CHAT_UNSURE.test(data) && data.includes('"choices":[')) return false
  } else {
    const type = leadingType(data)
    if (type !== undefined) return typeCarries(format, type) ?? parsedCarriesContent(format, data)
  }
  return parsedCarriesContent(format, data)
}

/** Whether a Messages or Responses event of `type` carries content; undefined for a content_block_start, which its block decides. */
function typeCarries(format: 'messages' | 'responses', type: unknown): boolean | undefined {
  if (format === 'responses') return typeof type !== 'string' || !RESPONSES_PREAMBLE.has(type)
  if (typeof type !== 'string' || MESSAGES_PREAMBLE.has(type)) return false
  return type === 'content_block_start' ? undefined : true
}

function parsedCarriesContent(format: StreamFormat, data: string): boolean {
  const event = parseObject(data)
  // Not ours to judge here: the relay passes it on and the stream reader rejects what is malformed.
  if (event === undefined) return true
  if (format !== 'chat') {
    const carries = typeCarries(format, event.type)
    if (carries !== undefined) return carries
    // An empty text or thinking block opening is preamble; a tool_use block names a call.
    const block = event.content_block as { type?: unknown; text?: unknown; thinking?: unknown } | undefined
    return !((block?.type === 'text' && !block.text) || (block?.type === 'thinking' && !block.thinking))
  }
  if (event.usage !== undefined && event.usage !== null) return true
  const choices = event.choices
  if (!Array.isArray(choices)) return true
  for (const choice of choices as Array<{ delta?: Record<string, unknown>; finish_reason?: unknown } | null>) {
    if (choice === null || typeof choice !== 'object') return true
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) return true
    const delta = choice.delta
    if (delta === undefined || delta === null) continue
    for (const field in delta) {
      const value = delta[field]
      if (field !== 'role' && value !== null && value !== undefined && value !== '' && !(Array.isArray(value) && value.length === 0)) return true
    }
  }
  return false
}
