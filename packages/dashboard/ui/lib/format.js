// How values read on the page. Formatting only: every value comes from the API as it is.
import { localInput } from './query.js'

export { localInput }

/** @typedef {number | string} Instant unix seconds, ms, or an ISO string */

/**
 * `value`'s label in `table`, else `value` itself: only the table's own entries count, so a
 * value such as "constructor" reads as itself, not as Object.prototype's function.
 */
export function labelOf(/** @type {Record<string, string>} */ table, /** @type {string} */ value) {
  return Object.hasOwn(table, value) ? /** @type {string} */ (table[value]) : value
}

/** The reference's words for a hold's reason (its failure class). */
export const REASONS = {
  credential: 'key rejected',
  quota: 'out of quota',
  model_access: 'no model access',
  model_gone: 'model retired',
  region_blocked: 'region blocked',
  rate_limit: 'rate limited',
  transient: 'transient errors',
  caller_fault: 'request errors',
  context_length: 'context too long',
  unknown: 'unrecognised failures',
  timeout: 'timeouts',
  cancelled: 'cancelled',
}

/** A reason (failure class) in words; an unknown one as it is, a missing one as ''. */
export const reasonLabel = (/** @type {string | null | undefined} */ reason) => (reason === null || reason === undefined ? '' : labelOf(REASONS, reason))

export const STATE_LABELS = { healthy: 'Healthy', degraded: 'Degraded', failed: 'Failed', recovering: 'Recovering' }

/** A route state in words ("Failed"); an unknown one as it is. */
export const stateLabel = (/** @type {string} */ state) => labelOf(STATE_LABELS, state)

/** An incident's status in words (reference: "Incidents"). */
export const STATUS_LABELS = { attention: 'Needs attention', recovering: 'Recovering', mitigated: 'Mitigated', waiting: 'Waiting for traffic', resolved: 'Resolved', unobserved: 'No longer observed' }

/** The badge colour of an HTTP status: 2xx/3xx healthy, 5xx failed, 4xx degraded. */
export const httpStatusState = (/** @type {number} */ status) => (status < 400 ? 'healthy' : status >= 500 ? 'failed' : 'degraded')

/** "1 attempt", "3 attempts" */
export const plural = (/** @type {number} */ value, /** @type {string} */ singular) => `${value} ${singular}${value === 1 ? '' : 's'}`

/**
 * "45 s", "12 min", "3 h 20 min", "2 days 4 h"; '—' when there is no number. Rounded to the
 * unit shown before it is split, so 3599 s reads "1 h", not "60 min".
 */
export function duration(/** @type {number | null | undefined} */ seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—'
  const s = Math.max(0, Math.round(seconds))
  if (s < 60) return `${s} s`
  const minutes = Math.round(s / 60)
  if (minutes < 60) return `${minutes} min`
  if (minutes < 24 * 60) return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`
  const hours = Math.round(s / 3600)
  return `${plural(Math.floor(hours / 24), 'day')}${hours % 24 ? ` ${hours % 24} h` : ''}`
}

const toMs = (/** @type {Instant} */ at) => (typeof at === 'number' ? (at < 1e12 ? at * 1000 : at) : Date.parse(at))
/** An instant's ms, or null when it is missing or not a time. */
const msOf = (/** @type {Instant | null | undefined} */ at) => {
  const ms = at === null || at === undefined ? Number.NaN : toMs(at)
  return Number.isFinite(ms) ? ms : null
}

/** "3 min ago" / "in 25 s", against `now` (ms). */
export function relative(/** @type {Instant | null | undefined} */ at, now = Date.now()) {
  const ms = msOf(at)
  if (ms === null) return '—'
  const delta = (ms - now) / 1000
  if (Math.abs(delta) < 1) return 'now'
  return delta > 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`
}

/**
 * When a due time reads against `now`: "in 25 s" ahead of it, "due now" within a second of it,
 * "overdue 48 s" past it (a check that is late is not something that happened "48 s ago").
 */
export function dueIn(/** @type {Instant | null | undefined} */ at, now = Date.now()) {
  const ms = msOf(at)
  if (ms === null) return '—'
  const delta = (ms - now) / 1000
  if (Math.abs(delta) < 1) return 'due now'
  return delta > 0 ? `in ${duration(delta)}` : `overdue ${duration(-delta)}`
}

/** @type {Intl.DateTimeFormatOptions} */
const STAMP_OPTIONS = { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }
// The browser's own locale, unless it names one Intl cannot use (a POSIX "en-US@posix" does that).
const stampFormat = (() => {
  try {
    return new Intl.DateTimeFormat(undefined, STAMP_OPTIONS)
  } catch {
    return new Intl.DateTimeFormat('en-US', STAMP_OPTIONS)
  }
})()

/** Local date and time, to the second; '—' for a value that is not a time (Intl would throw). */
export function stamp(/** @type {Instant | null | undefined} */ at) {
  const ms = msOf(at)
  return ms === null ? '—' : stampFormat.format(new Date(ms))
}

/** A share (0..1) as a percentage: "12.5%". */
export function percent(/** @type {number | null | undefined} */ share, digits = 1) {
  if (share === null || share === undefined || !Number.isFinite(share)) return '—'
  return `${(share * 100).toFixed(digits)}%`
}

/**
 * 312, 1.8K, 12K, 4.2M, 3.1B: rounded to the unit shown before the unit is picked, so 999,999
 * reads "1.0M", not "1000K".
 */
export function count(/** @type {number | null | undefined} */ value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—'
  if (Math.abs(value) < 1e3) return String(value)
  for (const [unit, size] of /** @type {const} */ ([['K', 1e3], ['M', 1e6], ['B', 1e9]])) {
    const scaled = Math.abs(value) / size
    // One decimal below 10 of the unit, whole units above; move up a unit once it reads 1000.
    const shown = scaled < 9.95 ? scaled.toFixed(1) : String(Math.round(scaled))
    if (Number(shown) < 1000 || unit === 'B') return `${value < 0 ? '-' : ''}${shown}${unit}`
  }
  return String(value) // not reached: the B unit always returns
}
