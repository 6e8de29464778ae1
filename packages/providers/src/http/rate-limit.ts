/**
 * What a provider's rate-limit headers say about a key on a successful answer: how much of its
 * window is left and when the window resets. OpenAI, Azure, Groq and Mistral send
 * `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`; Anthropic sends
 * `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`.
 */
import { parseDuration } from '../errors/index.ts'

/** A key's window is (nearly) spent: back it off until `untilMs`. */
export interface RateLimitExhaustion {
  /** Which window ran out. */
  window: 'requests' | 'tokens'
  remaining: number
  limit: number | null
  untilMs: number
}

const WINDOWS = [
  { window: 'requests', prefix: 'x-ratelimit-', suffix: '-requests', anthropic: 'anthropic-ratelimit-requests-' },
  { window: 'tokens', prefix: 'x-ratelimit-', suffix: '-tokens', anthropic: 'anthropic-ratelimit-tokens-' },
] as const

/** Spent below this share of the window's limit counts as exhausted (so we back off before a 429). */
const LOW_WATER = 0.01

/** Returns the exhausted window with the latest reset, or null while the key has room. */
export function readRateLimitExhaustion(headers: Record<string, string>, now: number): RateLimitExhaustion | null {
  let found: RateLimitExhaustion | null = null
  for (const spec of WINDOWS) {
    const remaining = number(headers[`${spec.prefix}remaining${spec.suffix}`] ?? headers[`${spec.anthropic}remaining`])
    if (remaining === null) continue
    const limit = number(headers[`${spec.prefix}limit${spec.suffix}`] ?? headers[`${spec.anthropic}limit`])
    const exhausted = remaining <= 0 || (limit !== null && limit > 0 && remaining / limit < LOW_WATER)
    if (!exhausted) continue
    const resetMs = resetAt(headers[`${spec.prefix}reset${spec.suffix}`], headers[`${spec.anthropic}reset`], now)
    if (resetMs === null || resetMs <= now) continue
    if (found === null || resetMs > found.untilMs) found = { window: spec.window, remaining, limit, untilMs: resetMs }
  }
  return found
}

function number(text: unknown): number | null {
  if (typeof text !== 'string' || text.trim() === '') return null
  const value = Number(text)
  return Number.isFinite(value) ? value : null
}

/** OpenAI-style resets are durations ("6m0s", "250ms", or bare seconds); Anthropic's are RFC 3339 times. */
function resetAt(duration: unknown, timestamp: unknown, now: number): number | null {
  if (typeof duration === 'string') {
    const ms = parseDuration(duration) ?? (Number.isFinite(Number(duration)) ? Number(duration) * 1000 : null)
    return ms === null ? null : now + ms
  }
  if (typeof timestamp === 'string') {
    const at = Date.parse(timestamp)
    return Number.isNaN(at) ? null : at
  }
  return null
}
