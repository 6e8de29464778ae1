/**
 * What a provider's rate-limit headers say about a key on a successful answer: how much of its
 * window is left and when it resets (`x-ratelimit-*-{requests,tokens}`, `anthropic-ratelimit-*`).
 */
import { resetDuration, resetTime } from '../errors/wait-hints.ts'

/** A key's window is (nearly) spent: back it off until `untilMs`. */
export interface RateLimitExhaustion {
  /** Which window ran out. */
  window: 'requests' | 'tokens'
  remaining: number
  limit: number | null
  untilMs: number
}

/** Header names per window, spelled out once: this runs on every successful answer. */
const WINDOWS = (['requests', 'tokens'] as const).map((window) => ({
  window,
  remaining: `x-ratelimit-remaining-${window}`,
  limit: `x-ratelimit-limit-${window}`,
  reset: `x-ratelimit-reset-${window}`,
  anthropicRemaining: `anthropic-ratelimit-${window}-remaining`,
  anthropicLimit: `anthropic-ratelimit-${window}-limit`,
  anthropicReset: `anthropic-ratelimit-${window}-reset`,
}))

/** Spent below this share of the window's limit counts as exhausted (so we back off before a 429). */
const LOW_WATER = 0.01

/** Returns the exhausted window with the latest reset, or null while the key has room. */
export function readRateLimitExhaustion(headers: Record<string, string>, now: number): RateLimitExhaustion | null {
  let found: RateLimitExhaustion | null = null
  for (const spec of WINDOWS) {
    const remaining = number(headers[spec.remaining] ?? headers[spec.anthropicRemaining])
    if (remaining === null) continue
    const limit = number(headers[spec.limit] ?? headers[spec.anthropicLimit])
    const exhausted = remaining <= 0 || (limit !== null && limit > 0 && remaining / limit < LOW_WATER)
    if (!exhausted) continue
    const duration = headers[spec.reset]
    const waitMs = duration !== undefined ? resetDuration(duration) : resetTime(headers[spec.anthropicReset], now)
    if (waitMs === null || waitMs <= 0) continue
    if (found === null || now + waitMs > found.untilMs) found = { window: spec.window, remaining, limit, untilMs: now + waitMs }
  }
  return found
}

function number(text: unknown): number | null {
  if (typeof text !== 'string' || text.trim() === '') return null
  const value = Number(text)
  return Number.isFinite(value) ? value : null
}
