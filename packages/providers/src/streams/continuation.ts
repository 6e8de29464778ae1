/**
 * Continuing a stream that broke after content went to the caller (issue 35): what was sent is
 * read back, sent again as an assistant prefill, and the continuation's events spliced on. Only
 * text is continued (a half tool call cannot be resumed, nor thinking prefilled). Runs only on a rescue.
 */
import { carriesContent, type StreamFormat } from './content.ts'
import { parseObject } from '../anthropic/messages.ts'

/** What a stream sent before it broke, as far as a continuation needs it. */
export interface SentSoFar {
  /** The answer's text so far. */
  text: string
  /** False when the stream sent something a prefill cannot carry (a tool call, thinking, reasoning). */
  continuable: boolean
  /** Messages: the index of the last content block, and whether it is still open. */
  lastBlock: number
  blockOpen: boolean
  /** Responses: the response's id, its message item's id and output index, the last sequence number. */
  responseId: string | null
  itemId: string | null
  outputIndex: number
  sequence: number
}

type Json = Record<string, unknown>

/** Reads the events a stream sent (their JSON data, in order). */
export function readSent(format: StreamFormat, events: readonly string[]): SentSoFar {
  const sent: SentSoFar = { text: '', continuable: true, lastBlock: -1, blockOpen: false, responseId: null, itemId: null, outputIndex: 0, sequence: -1 }
  for (const data of events) {
    const event = parseObject(data)
    if (event === undefined) continue
    if (format === 'chat') readChat(sent, event)
    else if (format === 'messages') readMessages(sent, event)
    else readResponses(sent, event)
  }
  return sent
}

function readChat(sent: SentSoFar, chunk: Json): void {
  const choices = Array.isArray(chunk.choices) ? (chunk.choices as Array<Json | null>) : []
  for (const choice of choices) {
    const delta = choice?.delta as Json | undefined
    if (delta === undefined || delta === null) continue
    if (typeof delta.content === 'string') sent.text += delta.content
    const calls = (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) || delta.function_call != null
    if (calls || isText(delta.reasoning_content) || isText(delta.reasoning)) sent.continuable = false
  }
}

function isText(value: unknown): boolean {
  return typeof value === 'string' && value !== ''
}

function readMessages(sent: SentSoFar, event: Json): void {
  const index = typeof event.index === 'number' ? event.index : -1
  if (event.type === 'content_block_start') {
    const block = event.content_block as Json | undefined
    if (block?.type !== 'text') sent.continuable = false
    else if (typeof block.text === 'string') sent.text += block.text
    sent.lastBlock = index
    sent.blockOpen = true
  } else if (event.type === 'content_block_delta') {
    const delta = event.delta as Json | undefined
    if (delta?.type === 'text_delta' && typeof delta.text === 'string') sent.text += delta.text
    else sent.continuable = false
  } else if (event.type === 'content_block_stop' && index === sent.lastBlock) sent.blockOpen = false
}

function readResponses(sent: SentSoFar, event: Json): void {
  if (typeof event.sequence_number === 'number') sent.sequence = event.sequence_number
  const type = event.type
  if (type === 'response.created') {
    const response = event.response as Json | undefined
    if (typeof response?.id === 'string') sent.responseId = response.id
  } else if (type === 'response.output_item.added') {
    const item = event.item as Json | undefined
    if (item?.type !== 'message' || sent.itemId !== null) sent.continuable = false
    else {
      sent.itemId = typeof item.id === 'string' ? item.id : null
      sent.outputIndex = typeof event.output_index === 'number' ? event.output_index : 0
    }
  } else if (type === 'response.output_text.delta') {
    if (typeof event.delta === 'string') sent.text += event.delta
  } else if (typeof type === 'string' && (type.includes('function_call') || type.includes('reasoning'))) sent.continuable = false
}

/** The caller's body with the text sent so far as the last, assistant, message (trailing whitespace dropped: Anthropic refuses it). */
export function continuationBody(format: StreamFormat, body: Json, text: string): Json {
  const prefill = text.trimEnd()
  if (format === 'responses') {
    const input = body.input
    const items = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? [...input] : []
    items.push({ role: 'assistant', content: prefill })
    return { ...body, input: items }
  }
  const messages = Array.isArray(body.messages) ? [...(body.messages as unknown[])] : []
  messages.push({ role: 'assistant', content: prefill })
  return { ...body, messages }
}

/** Splices a continuation's events onto what was sent: preamble dropped, indexes, ids and final texts those of the caller's answer. */
export class ContinuationSplicer {
  private started = false
  /** The caller's text ends in whitespace the prefill dropped: the continuation's first text loses its own. */
  private trailingSpace: boolean
  private sequence: number

  constructor(private readonly format: StreamFormat, private readonly sent: SentSoFar) {
    this.trailingSpace = sent.text !== sent.text.trimEnd()
    this.sequence = sent.sequence
  }

  /** The event to pass on for the continuation's `data`, or null to drop it. */
  accept(data: string): string | null {
    const first = !this.started
    if (first) {
      if (!carriesContent(this.format, data)) return null
      this.started = true
    }
    // Chat chunks pass as they came, but for the first one's text (see `trimFirst`).
    if (this.format === 'chat' && !(first && this.trailingSpace)) return data
    const event = parseObject(data)
    if (event === undefined) return data
    if (this.format === 'messages') return this.messages(event)
    return this.format === 'responses' ? this.responses(event) : this.chat(event, data)
  }

  private chat(chunk: Json, data: string): string {
    const delta = (chunk.choices as Array<Json> | undefined)?.[0]?.delta as Json | undefined
    if (typeof delta?.content !== 'string') return data
    delta.content = this.trimFirst(delta.content)
    return JSON.stringify(chunk)
  }

  /** The continuation's first text, without the whitespace the caller already has (the prefill dropped it). */
  private trimFirst(text: string): string {
    if (!this.trailingSpace) return text
    this.trailingSpace = false
    return text.trimStart()
  }

  private messages(event: Json): string | null {
    const sent = this.sent
    // The continuation's block 0 goes on in the block the caller has open; later ones follow it.
    const base = sent.blockOpen ? sent.lastBlock : sent.lastBlock + 1
    if (typeof event.index === 'number') {
      if (event.type === 'content_block_start' && event.index === 0 && sent.blockOpen) return null
      event.index = event.index + base
    }
    const delta = event.delta as Json | undefined
    if (event.type === 'content_block_delta' && delta?.type === 'text_delta' && typeof delta.text === 'string') delta.text = this.trimFirst(delta.text)
    if (event.type === 'message_start' || event.type === 'ping') return null
    return JSON.stringify(event)
  }

  private responses(event: Json): string | null {
    const sent = this.sent
    const type = event.type
    if (type === 'response.created' || type === 'response.in_progress' || type === 'response.queued') return null
    const opensMessage = type === 'response.content_part.added' || (type === 'response.output_item.added' && (event.item as Json | undefined)?.type === 'message')
    if (sent.itemId !== null && opensMessage) return null
    if (typeof event.sequence_number === 'number') event.sequence_number = ++this.sequence
    if (sent.itemId !== null && typeof event.item_id === 'string') {
      event.item_id = sent.itemId
      event.output_index = sent.outputIndex
    }
    const prefix = sent.text
    if (type === 'response.output_text.delta' && typeof event.delta === 'string') event.delta = this.trimFirst(event.delta)
    else if (type === 'response.output_text.done' && typeof event.text === 'string') event.text = joinText(prefix, event.text)
    else if (type === 'response.content_part.done') prefixPart(event.part, prefix)
    else if (type === 'response.output_item.done') this.prefixItem(event.item, prefix, event)
    else if (type === 'response.completed' || type === 'response.incomplete') {
      const response = event.response as Json | undefined
      if (response !== undefined) {
        if (sent.responseId !== null) response.id = sent.responseId
        const output = Array.isArray(response.output) ? (response.output as Json[]) : []
        const message = output.find((item) => item?.type === 'message')
        if (message !== undefined) this.prefixItem(message, prefix, null)
      }
    }
    return JSON.stringify(event)
  }

  private prefixItem(item: unknown, prefix: string, event: Json | null): void {
    const record = item as Json | undefined
    if (record?.type !== 'message') return
    if (this.sent.itemId !== null) record.id = this.sent.itemId
    if (event !== null) event.output_index = this.sent.outputIndex
    const content = Array.isArray(record.content) ? (record.content as Json[]) : []
    if (content[0] !== undefined) prefixPart(content[0], prefix)
  }
}

function prefixPart(part: unknown, prefix: string): void {
  const record = part as Json | undefined
  if (record !== undefined && typeof record.text === 'string') record.text = joinText(prefix, record.text)
}

/** The caller's text and the continuation's, without doubling the whitespace the prefill dropped. */
function joinText(prefix: string, rest: string): string {
  return prefix !== prefix.trimEnd() ? prefix + rest.trimStart() : prefix + rest
}
