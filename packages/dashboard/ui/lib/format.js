// How values read on the page. Formatting only: every value comes from the API as it is.

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

export const reasonLabel = (reason) => REASONS[reason] ?? reason ?? ''

export const STATE_LABELS = { healthy: 'Healthy', degraded: 'Degraded', failed: 'Failed', recovering: 'Recovering' }

const unit = (value, singular) => `${value} ${singular}${value === 1 ? '' : 's'}`

/** "45 s", "12 min", "3 h 20 min", "2 d 4 h" */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return '—'
  const s = Math.max(0, Math.round(seconds))
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.round(s / 60)} min`
  if (s < 86400) {
    const minutes = Math.round((s % 3600) / 60)
    return `${Math.floor(s / 3600)} h${minutes ? ` ${minutes} min` : ''}`
  }
  const hours = Math.round((s % 86400) / 3600)
  return `${unit(Math.floor(s / 86400), 'day')}${hours ? ` ${hours} h` : ''}`
}

const toMs = (at) => (typeof at === 'number' ? (at < 1e12 ? at * 1000 : at) : Date.parse(at))

/** "3 min ago" / "in 25 s", against `now` (ms). */
export function relative(at, now = Date.now()) {
  if (at === null || at === undefined) return '—'
  const delta = (toMs(at) - now) / 1000
  if (Math.abs(delta) < 1) return 'now'
  return delta > 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`
}

/**
 * When a due time reads against `now`: "in 25 s" ahead of it, "due now" within a second of it,
 * "overdue 48 s" past it (a check that is late is not something that happened "48 s ago").
 */
export function dueIn(at, now = Date.now()) {
  if (at === null || at === undefined) return '—'
  const delta = (toMs(at) - now) / 1000
  if (Math.abs(delta) < 1) return 'due now'
  return delta > 0 ? `in ${duration(delta)}` : `overdue ${duration(-delta)}`
}

const STAMP_OPTIONS = { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }
// The browser's own locale, unless it names one Intl cannot use (a POSIX "en-US@posix" does that).
const stampFormat = (() => {
  try {
    return new Intl.DateTimeFormat(undefined, STAMP_OPTIONS)
  } catch {
    return new Intl.DateTimeFormat('en-US', STAMP_OPTIONS)
  }
})()

/** Local date and time, to the second. */
export function stamp(at) {
  if (at === null || at === undefined) return '—'
  return stampFormat.format(new Date(toMs(at)))
}

export function percent(share, digits = 1) {
  if (share === null || share === undefined) return '—'
  return `${(share * 100).toFixed(digits)}%`
}

/** 1.8K, 312, 4.2M */
export function count(value) {
  if (value === null || value === undefined) return '—'
  if (value >= 1e6) return `${(value / 1e6).toFixed(1)}M`
  if (value >= 1e4) return `${Math.round(value / 1e3)}K`
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)}K`
  return String(value)
}

/** An instant as a datetime-local input's value (local time, to the minute). */
export function localInput(at) {
  const date = new Date(toMs(at))
  const pad = (value) => String(value).padStart(2, '0')
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`
}
