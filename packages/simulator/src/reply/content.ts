import { isFields, type Fields } from '../dialects/dialect.ts'
import type { ProviderName } from '../index.ts'

/** The text and token counts of one simulated answer. */
export interface Reply {
  text: string
  completionTokens: number
  /** True when the request's max_tokens cut the reply short. */
  truncated: boolean
}

/** Words appended to reach a requested size; fixed so replies are deterministic. */
const filler = ' The simulator keeps writing plain words so the reply reaches the size a rule asked for.'

/** Approximate tokens of a text: about four characters each, at least one. */
export function estimateTokens(characters: number): number {
  return Math.max(1, Math.ceil(characters / 4))
}

/** The deterministic reply for a request; with a size rule, usage reports exactly `completionTokens`. */
export function buildReply(
  provider: ProviderName, model: string, completionTokens: number | undefined, maxTokens: number | undefined,
): Reply {
  let text = `Hello from the simulator (${provider}/${model}).`
  let tokens = completionTokens ?? estimateTokens(text.length)
  if (completionTokens !== undefined) {
    const wanted = completionTokens * 4
    while (text.length < wanted) text += filler
    text = text.slice(0, wanted)
  }
  let truncated = false
  if (maxTokens !== undefined && maxTokens > 0 && tokens > maxTokens) {
    tokens = maxTokens
    text = text.slice(0, maxTokens * 4)
    truncated = true
  }
  return { text, completionTokens: tokens, truncated }
}

/** Splits a reply into stream pieces of about two words, like a token stream but cheaper. */
export function splitForStream(text: string): string[] {
  const pieces: string[] = []
  let start = 0
  let spaces = 0
  for (let index = 1; index < text.length; index += 1) {
    if (text.charCodeAt(index) === 32 && ++spaces % 2 === 0) {
      pieces.push(text.slice(start, index))
      start = index
    }
  }
  pieces.push(text.slice(start))
  return pieces
}

/** Splits text into pieces of `size` characters (tool-call arguments stream this way). */
export function splitEvery(text: string, size: number): string[] {
  const pieces: string[] = []
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size))
  return pieces.length === 0 ? [''] : pieces
}

/** Characters of prompt text in chat messages (strings and text parts) plus an optional system prompt. */
export function promptCharacters(messages: unknown, system?: unknown): number {
  let total = countText(system)
  if (Array.isArray(messages)) {
    for (const message of messages) {
      if (typeof message === 'object' && message !== null) total += countText((message as { content?: unknown }).content)
    }
  }
  return total
}

/** Characters of a message's content: a string, or the text of its parts. */
export function countText(content: unknown): number {
  return typeof content === 'string' ? content.length : partCharacters(content)
}

/** Characters of the `text` of a list's parts, plus what `more` counts in each part (tool calls, tool results). */
export function partCharacters(parts: unknown, more?: (part: Fields) => number): number {
  if (!Array.isArray(parts)) return 0
  let total = 0
  for (const part of parts) {
    if (!isFields(part)) continue
    if (typeof part.text === 'string') total += part.text.length
    if (more !== undefined) total += more(part)
  }
  return total
}

/** Arguments that satisfy a JSON schema's top-level properties with placeholder values. */
export function toolArguments(schema: unknown): Record<string, unknown> {
  const properties = (schema as { properties?: unknown } | null | undefined)?.properties
  if (typeof properties !== 'object' || properties === null) return {}
  return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, placeholder(property)]))
}

function placeholder(property: unknown): unknown {
  const description = (typeof property === 'object' && property !== null ? property : {}) as { type?: unknown; enum?: unknown }
  if (Array.isArray(description.enum) && description.enum.length > 0) return description.enum[0]
  switch (description.type) {
    case 'number':
    case 'integer': return 1
    case 'boolean': return true
    case 'array': return []
    case 'object': return {}
    default: return 'simulated'
  }
}
