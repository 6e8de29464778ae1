/** Small helpers the surface translations share. */
import { TranslationError, unsupported } from '../anthropic/errors.ts'
import type { TokenCounts } from '../anthropic/finish.ts'
import { asRecord, parseObject } from '../anthropic/messages.ts'

export { asRecord }

/** The text of a text-like block (`text`, `input_text`, `output_text`); anything else is refused. */
export function textOf(block: unknown, at: string): string {
  if (typeof block === 'string') return block
  const record = asRecord(block)
  if (record !== undefined && typeof record.text === 'string' && (record.type === 'text' || record.type === 'input_text' || record.type === 'output_text')) return record.text
  throw unsupported(`${at}: only text can go here when the upstream speaks another format (got "${String(record?.type)}").`, at)
}

/** The parsed JSON object of a chat completion success (bytes passed through, or a built body). */
export function chatBodyOf(success: { bytes?: Buffer | undefined; body?: Record<string, unknown> | undefined }): Record<string, unknown> {
  if (success.body !== undefined) return success.body
  const record = asRecord(JSON.parse(success.bytes!.toString('utf8')))
  if (record === undefined) throw new TranslationError('upstream_malformed', 'The upstream answered with JSON that is not an object.')
  return record
}

/** Chat `usage` read as numbers (0 when absent). */
export function chatUsage(usage: unknown): Required<TokenCounts> {
  const record = asRecord(usage)
  const number = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0)
  return {
    promptTokens: number(record?.prompt_tokens),
    completionTokens: number(record?.completion_tokens),
    cachedTokens: number(asRecord(record?.prompt_tokens_details)?.cached_tokens),
    reasoningTokens: number(asRecord(record?.completion_tokens_details)?.reasoning_tokens),
  }
}

/** Parses a tool call's argument text; text that is not a JSON object is kept under `_raw` rather than lost. */
export function parseArguments(text: string): Record<string, unknown> {
  return text.trim() === '' ? {} : (parseObject(text) ?? { _raw: text })
}

let counter = 0
/** An id with a provider-like prefix (`msg_`, `resp_`, `fc_`), unique within the process. */
export function newId(prefix: string): string {
  counter = (counter + 1) % 0x7fffffff
  return `${prefix}${Date.now().toString(36)}${counter.toString(36).padStart(6, '0')}${Math.floor(Math.random() * 0xffffff).toString(36)}`
}

/** One chat stream chunk's JSON object (undefined for a non-object); text that is not JSON is the upstream's fault. */
export function parseChunk(text: string): Record<string, unknown> | undefined {
  try {
    return asRecord(JSON.parse(text))
  } catch {
    throw new TranslationError('upstream_malformed', 'The upstream stream sent a chunk that is not JSON.')
  }
}

/** The tool calls of a chat message, or the pieces of them a stream delta carries: the call each continues (`index`), its id, name and argument text. */
export function toolCallPieces(delta: Record<string, unknown> | undefined): { callIndex: number; id: unknown; name: unknown; piece: unknown }[] {
  const calls = Array.isArray(delta?.tool_calls) ? delta.tool_calls : []
  return calls.map((call) => {
    const record = asRecord(call)
    const fn = asRecord(record?.function)
    return { callIndex: typeof record?.index === 'number' ? record.index : 0, id: record?.id, name: fn?.name, piece: fn?.arguments }
  })
}
