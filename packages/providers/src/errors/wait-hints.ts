/**
 * How long a provider asked us to wait ("How long a key is held"). First source present wins:
 * `retry-after-ms`, `retry-after` (seconds or an HTTP date), `x-ratelimit-reset-*` durations,
 * `anthropic-ratelimit-*-reset` timestamps, Gemini's `RetryInfo`, then wording ("try again in
 * 20s"). A negative or unreadable value counts as absent.
 */
import type { ErrorReport } from './body.ts'

const MILLISECONDS_PER_UNIT: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** One `<number><unit>` piece of a Go duration (micro signs escaped: the compiled bundle stays ASCII, which loads faster). */
const DURATION_PIECE = /(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|h|m|s)/y

/** A Go-style duration ("1m30s", "250ms", "0.5s") in milliseconds; null for anything else (bare numbers but "0" too). */
export function parseDuration(text: string): number | null {
  const trimmed = text.trim()
  if (trimmed === '0') return 0
  if (trimmed === '') return null
  const piece = new RegExp(DURATION_PIECE.source, 'y')
  let total = 0
  let index = 0
  while (index < trimmed.length) {
    piece.lastIndex = index
    const match = piece.exec(trimmed)
    if (match === null) return null
    total += Number(match[1]) * (MILLISECONDS_PER_UNIT[match[2] ?? ''] ?? Number.NaN)
    index = piece.lastIndex
  }
  // Round away binary noise (1.234 * 1000 = 1234.0000000000002) so callers can round up safely.
  return Number.isFinite(total) ? Math.round(total * 1000) / 1000 : null
}

const DECIMAL = /^\d+(?:\.\d+)?$/

function nonNegative(value: number | null): number | null {
  return value !== null && Number.isFinite(value) && value >= 0 ? value : null
}

/** A header's value when it is a plain decimal number, else null. */
function decimal(value: string | undefined): number | null {
  const trimmed = value?.trim()
  return trimmed !== undefined && DECIMAL.test(trimmed) ? Number(trimmed) : null
}

function fromRetryAfter(value: string | undefined, now: number): number | null {
  const seconds = decimal(value)
  if (seconds !== null) return nonNegative(seconds * 1000)
  const trimmed = value?.trim() ?? ''
  // An HTTP date starts with a day name; Date.parse alone would accept far too much.
  const at = /^[A-Za-z]{3}/.test(trimmed) ? Date.parse(trimmed) : Number.NaN
  return Number.isNaN(at) ? null : nonNegative(at - now)
}

/** The longest wait of the windows whose remaining count is 0, or of all when none says so. */
function relevantLongest(windows: { waitMs: number | null; remaining: string | undefined }[]): number | null {
  const known = windows.filter((window) => window.waitMs !== null && window.waitMs > 0)
  const exhausted = known.filter((window) => window.remaining?.trim() === '0')
  const chosen = exhausted.length > 0 ? exhausted : known
  return chosen.length === 0 ? null : Math.max(...chosen.map((window) => window.waitMs ?? 0))
}

/** Ms until a window resets by its `x-ratelimit-reset-*` value: OpenAI and Groq send Go durations, Azure bare seconds. */
export function resetDuration(value: string | undefined): number | null {
  const seconds = decimal(value)
  return seconds !== null ? seconds * 1000 : value === undefined ? null : parseDuration(value)
}

/** Ms until a window resets by its `anthropic-ratelimit-*-reset` value, an RFC 3339 time. */
export function resetTime(value: string | undefined, now: number): number | null {
  const trimmed = value?.trim()
  const at = trimmed !== undefined && /^\d{4}-\d{2}-\d{2}T/.test(trimmed) ? Date.parse(trimmed) : Number.NaN
  return Number.isNaN(at) ? null : at - now
}

/** The rate-limit windows' resets: OpenAI's (and Groq's, Azure's) `x-ratelimit-reset-*`, else Anthropic's `anthropic-ratelimit-*-reset`. */
function fromResets(headers: Record<string, string>, now: number): number | null {
  return relevantLongest(['requests', 'tokens'].map((name) => ({ waitMs: resetDuration(headers[`x-ratelimit-reset-${name}`]), remaining: headers[`x-ratelimit-remaining-${name}`] })))
    ?? relevantLongest(['requests', 'tokens', 'input-tokens', 'output-tokens'].map((name) => ({ waitMs: resetTime(headers[`anthropic-ratelimit-${name}-reset`], now), remaining: headers[`anthropic-ratelimit-${name}-remaining`] })))
}

/** Protobuf JSON writes a Duration as "37s"; a transcoder may hand over `{ seconds, nanos }`. */
function fromRetryInfo(delays: unknown[]): number | null {
  for (const delay of delays) {
    let parsed: number | null = null
    if (typeof delay === 'string') parsed = nonNegative(parseDuration(delay))
    else if (typeof delay === 'object' && delay !== null) {
      const { seconds, nanos } = delay as { seconds?: unknown; nanos?: unknown }
      parsed = nonNegative(Number(seconds ?? 0) * 1000 + Number(nanos ?? 0) / 1e6)
    }
    if (parsed !== null) return parsed
  }
  return null
}

/** Milliseconds per unit word, its plural `s` dropped. */
const WORD_UNITS: Record<string, number> = { millisecond: 1, msec: 1, second: 1000, sec: 1000, minute: 60_000, min: 60_000, hour: 3_600_000, hr: 3_600_000 }

/** "Please try again in 20s", "try again in 6ms" (OpenAI, Groq), "Please retry after 7 seconds" (Azure). */
const WAIT_WORDING = /(?:try again|retry)\s+(?:in|after)\s+(?:((?:\d+(?:\.\d+)?(?:ns|us|\u00b5s|ms|h|m|s))+)|(\d+(?:\.\d+)?)\s*(milliseconds?|msecs?|seconds?|secs?|minutes?|mins?|hours?|hrs?))(?![a-z])/i

/** Azure's "Quota will be replenished in 2.06:46:18" (a .NET TimeSpan: days, then hh:mm:ss). */
const REPLENISHED = /replenished in\s+(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?!\d)/i

function fromWording(text: string): number | null {
  const replenished = REPLENISHED.exec(text)
  if (replenished !== null) {
    const [, days, hours, minutes, seconds] = replenished
    return (((Number(days ?? 0) * 24 + Number(hours)) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000
  }
  const match = WAIT_WORDING.exec(text)
  if (match === null) return null
  if (match[1] !== undefined) return nonNegative(parseDuration(match[1]))
  const perUnit = WORD_UNITS[(match[3] ?? '').toLowerCase().replace(/s$/, '')]
  return perUnit === undefined ? null : nonNegative(Number(match[2]) * perUnit)
}

/**
 * How long the provider asked us to wait, in ms, or null when it said nothing usable, from the answer's
 * headers and its already-read error report (classifyFailure reads the body once); `now` (epoch ms) reads
 * HTTP dates and RFC 3339 resets. `readResets`: read the rate-limit windows' resets too (a wait hint only for a rate-limit failure).
 */
export function waitHintFromReport(headers: Record<string, string>, report: ErrorReport, now: number, readResets: boolean): number | null {
  const waitMs =
    nonNegative(decimal(headers['retry-after-ms'])) ??
    fromRetryAfter(headers['retry-after'], now) ??
    (readResets ? fromResets(headers, now) : null) ??
    fromRetryInfo(report.retryDelays) ??
    fromWording(`${report.message} ${report.context}`)
  // Round up: waiting a fraction of a millisecond too long is harmless, too short is not.
  return waitMs === null ? null : Math.ceil(waitMs)
}
