/**
 * The token counts of a served answer, for the balancer's token-aware latency (a long
 * completion is not a slow provider). An OpenAI-shaped answer is passed through as bytes,
 * so its `usage` object is found from the end (where providers put it) and only that small
 * object is parsed.
 */
import type { JsonSuccess } from './types.ts'

/** Prompt and completion tokens as the answer reports them. */
export interface TokenUsage {
  promptTokens: number
  completionTokens: number
}

/** Reads `usage.prompt_tokens` / `usage.completion_tokens`; null when the answer has none. */
export function readUsage(success: JsonSuccess): TokenUsage | null {
  if (success.bytes === undefined) return usageOf(success.body.usage)
  const bytes = success.bytes
  const key = bytes.lastIndexOf('"usage"')
  if (key < 0) return null
  let open = key + 7
  while (open < bytes.length && bytes[open] !== 0x7b && (bytes[open] === 0x20 || bytes[open] === 0x3a || bytes[open] === 0x0a || bytes[open] === 0x0d || bytes[open] === 0x09)) open++
  if (bytes[open] !== 0x7b) return null
  const close = matchingBrace(bytes, open)
  if (close < 0) return null
  try {
    return usageOf(JSON.parse(bytes.toString('utf8', open, close + 1)))
  } catch {
    return null
  }
}

/** The index of the `}` closing the object opened at `open`, skipping strings; -1 when it never closes. */
function matchingBrace(bytes: Buffer, open: number): number {
  let depth = 0
  let inString = false
  for (let index = open; index < bytes.length; index++) {
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

function usageOf(usage: unknown): TokenUsage | null {
  if (usage === null || typeof usage !== 'object') return null
  const { prompt_tokens: prompt, completion_tokens: completion } = usage as Record<string, unknown>
  if (typeof prompt !== 'number' || typeof completion !== 'number' || !Number.isFinite(prompt) || !Number.isFinite(completion)) return null
  return { promptTokens: prompt, completionTokens: completion }
}
