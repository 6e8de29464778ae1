/** Framing of the named-event streams (Messages, Responses): `event: <type>` then `data: <json>`, the last carrying `extra_fields`. */
import { leadingType } from '@switchboard/providers'
import { spliceExtraFields, type StreamFraming } from './render.ts'
import type { Served } from './engine.ts'

/** The event name of a data line: its `type` field (read in place when it comes first, as providers send it). */
export function eventName(data: string): string {
  const leading = leadingType(data)
  if (leading !== undefined) return leading
  try {
    const type = (JSON.parse(data) as { type?: unknown }).type
    return typeof type === 'string' ? type : 'message'
  } catch {
    return 'message'
  }
}

function named(data: string): string {
  return `event: ${eventName(data)}\ndata: ${data}\n\n`
}

function lastWithFields(pending: string | null, served: Served, empty: string): string {
  const extra = JSON.stringify(served.extraFields)
  if (pending === null) return named(spliceExtraFields(empty, extra)!)
  const spliced = spliceExtraFields(pending, extra)
  return spliced === null ? `${named(pending)}${named(spliceExtraFields(empty, extra)!)}` : named(spliced)
}

/** Messages events that are never a stream's last: everything before `message_delta`. */
const MESSAGES_NOT_LAST = new Set(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'ping'])

/** Responses events that may end a stream: its terminal states (and anything not named `response.*`). */
const RESPONSES_ENDINGS = new Set(['response.completed', 'response.incomplete', 'response.failed'])

/** Anthropic Messages streams; a break after the start ends with Anthropic's `error` event. */
export const ANTHROPIC_FRAMING: StreamFraming = {
  frame: named,
  mayEnd: (data) => !MESSAGES_NOT_LAST.has(eventName(data)),
  last: (pending, served) => lastWithFields(pending, served, '{"type":"message_stop"}'),
  error: (message, _code, extraFields) => named(JSON.stringify({ type: 'error', error: { type: 'api_error', message }, extra_fields: extraFields })),
  end: '',
}

/** OpenAI Responses streams; a break after the start ends with the Responses `error` event. */
export const RESPONSES_FRAMING: StreamFraming = {
  frame: named,
  mayEnd: (data) => {
    const name = eventName(data)
    return RESPONSES_ENDINGS.has(name) || !name.startsWith('response.')
  },
  last: (pending, served) => lastWithFields(pending, served, '{"type":"response.completed"}'),
  error: (message, code, extraFields) => named(JSON.stringify({ type: 'error', code, message, param: null, extra_fields: extraFields })),
  end: '',
}
