/**
 * The token counts of a served answer, for the balancer's token-aware latency. An answer passed
 * through as bytes has its `usage` found from the end, where providers put it, and only that parsed.
 */
import type { TokenUsage } from '@switchboard/routing'

const USAGE_KEY = Buffer.from('"usage"')
const PROMPT_KEY = Buffer.from('"prompt_tokens":')
const COMPLETION_KEY = Buffer.from('"completion_tokens":')

/** Reads `usage.prompt_tokens` / `usage.completion_tokens` of an answer's bytes, null when none; once per answer (send.ts). */
export function readUsage(bytes: Buffer): TokenUsage | null {
  const key = bytes.lastIndexOf(USAGE_KEY)
  if (key < 0) return null
  let open = key + USAGE_KEY.length
  while (open < bytes.length && (bytes[open] === 0x20 || bytes[open] === 0x3a || bytes[open] === 0x0a || bytes[open] === 0x0d || bytes[open] === 0x09)) open++
  if (bytes[open] !== 0x7b) return null
  // The usual shape, compact JSON with both counts: read the two integers where they stand.
  const promptAt = bytes.indexOf(PROMPT_KEY, open)
  const completionAt = bytes.indexOf(COMPLETION_KEY, open)
  const promptTokens = integerAfter(bytes, promptAt, PROMPT_KEY.length)
  const completionTokens = integerAfter(bytes, completionAt, COMPLETION_KEY.length)
  // Both must stand inside this usage object (they come first in it, so the check is short).
  if (promptTokens !== null && completionTokens !== null && matchingBrace(bytes, open, Math.max(promptAt, completionAt)) < 0) {
    return { promptTokens, completionTokens }
  }
  // Anything else (spaces around colons, counts elsewhere, input_tokens): parse the usage object itself.
  const close = matchingBrace(bytes, open)
  if (close < 0) return null
  try {
    return usageOf(JSON.parse(bytes.toString('utf8', open, close + 1)))
  } catch {
    return null
  }
}

/** The non-negative integer right after the key found at `at`, ending at `,` or `}`; null otherwise. */
function integerAfter(bytes: Buffer, at: number, keyLength: number): number | null {
  if (at < 0) return null
  let index = at + keyLength
  let value = 0
  let digits = 0
  while (index < bytes.length && bytes[index]! >= 0x30 && bytes[index]! <= 0x39 && digits < 15) {
    value = value * 10 + (bytes[index]! - 0x30)
    index++
    digits++
  }
  return digits > 0 && (bytes[index] === 0x2c || bytes[index] === 0x7d) ? value : null
}

/** The index of the `}` closing the object opened at `open`, skipping strings; -1 when it does not close before `until`. */
function matchingBrace(bytes: Buffer, open: number, until = bytes.length): number {
  let depth = 0
  let inString = false
  for (let index = open; index < until; index++) {
    const byte = bytes[index]!
    if (inString) {
      if (byte === 0x5c /* \ */) index++
      else if (byte === 0x22) inString = false
      continue
    }
    if (byte === 0x22) inString = true
    else if (byte === 0x7b) depth++
    else if (byte === 0x7d && --depth === 0) return index
  }
  return -1
}

/** Token counts in any surface's words (`prompt_tokens`, `input_tokens`; Anthropic's cache reads and writes are input too). */
export function usageOf(usage: unknown): TokenUsage | null {
  if (usage === null || typeof usage !== 'object') return null
  const record = usage as Record<string, unknown>
  const prompt = count(record.prompt_tokens) ?? count(record.input_tokens)
  if (prompt === null) return null
  const cached = (count(record.cache_read_input_tokens) ?? 0) + (count(record.cache_creation_input_tokens) ?? 0)
  const completion = count(record.completion_tokens) ?? count(record.output_tokens) ?? 0
  return { promptTokens: prompt + cached, completionTokens: completion }
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null
}

/** The token counts of a stream, read off its events as they pass; only events that mention `"usage"` are parsed. */
export class StreamUsage {
  private prompt = 0
  private completion = 0
  private seen = false

  read(data: string): void {
    const at = data.indexOf('"usage"')
    if (at < 0) return
    // OpenAI streams with include_usage carry `"usage":null` in every chunk but the last: not parsed.
    let next = at + 7
    while (next < data.length && (data.charCodeAt(next) === 0x3a || data.charCodeAt(next) === 0x20)) next++
    if (data.charCodeAt(next) !== 0x7b) return
    let event: { usage?: unknown; message?: { usage?: unknown }; response?: { usage?: unknown } }
    try {
      event = JSON.parse(data) as typeof event
    } catch {
      return
    }
    const usage = usageOf(event?.usage ?? event?.message?.usage ?? event?.response?.usage)
    if (usage === null) {
      // Anthropic's message_delta states output tokens alone.
      const output = count((event?.usage as { output_tokens?: unknown } | undefined)?.output_tokens)
      if (output === null) return
      this.completion = output
      this.seen = true
      return
    }
    this.prompt = Math.max(this.prompt, usage.promptTokens)
    this.completion = Math.max(this.completion, usage.completionTokens)
    this.seen = true
  }

  /** What the stream reported, or null when it reported nothing. */
  get usage(): TokenUsage | null {
    return this.seen ? { promptTokens: this.prompt, completionTokens: this.completion } : null
  }
}
