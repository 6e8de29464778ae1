/**
 * Query parameters of the history API, parsed once with errors that say what to fix
 * (reference: "Listing incidents through the API").
 */

/** A parameter the history or request-log API refuses; the HTTP layer answers 400 with `message` and `param`. */
export class HistoryQueryError extends Error {
  readonly code = 'invalid_history_query'
  readonly status = 400
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message)
    this.name = 'HistoryQueryError'
  }
}

/** Reads a query string value as a list (comma-separated, trimmed, empties dropped); undefined when absent. */
export function list(query: URLSearchParams, name: string): string[] | undefined {
  const values = query.getAll(name)
  if (values.length === 0) return undefined
  const items = values.flatMap((value) => value.split(',')).map((item) => item.trim()).filter((item) => item !== '')
  return items.length === 0 ? undefined : items
}

/** A list whose every item must be one of `allowed`. */
export function enumList<T extends string>(query: URLSearchParams, name: string, allowed: readonly T[]): T[] | undefined {
  const items = list(query, name)
  const invalid = items?.find((item) => !(allowed as readonly string[]).includes(item))
  if (invalid !== undefined) throw new HistoryQueryError(name, `"${invalid}" is not a valid value for ${name}: use ${allowed.join(', ')}.`)
  return items as T[] | undefined
}

/** A time as RFC 3339 or unix seconds (reference: `from`, `to`), in ms. */
export function parseTime(value: string, param: string): number {
  const trimmed = value.trim()
  if (/^-?\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  // RFC 3339: a date, a time and an offset (Z or ±hh:mm).
  if (/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$/.test(trimmed)) {
    const ms = Date.parse(trimmed.replace(' ', 'T'))
    if (Number.isFinite(ms)) return ms
  }
  throw new HistoryQueryError(param, `${param} must be an RFC 3339 time (2026-12-01T13:00:00Z) or unix seconds (got "${value}").`)
}

/** A window as the API gives it back: `from` and `to` in ISO 8601. */
export const windowTimes = (window: { from: number; to: number }) => ({ from: new Date(window.from).toISOString(), to: new Date(window.to).toISOString() })

/** The window of a query: `from` and `to`, defaulting to the last 24 hours before `now`. */
export function parseWindow(query: URLSearchParams, now: number, defaultMs = 86_400_000): { from: number; to: number } {
  const toValue = query.get('to')
  const fromValue = query.get('from')
  const to = toValue === null || toValue === '' ? now : parseTime(toValue, 'to')
  const from = fromValue === null || fromValue === '' ? to - defaultMs : parseTime(fromValue, 'from')
  if (from > to) throw new HistoryQueryError('from', `from (${new Date(from).toISOString()}) is after to (${new Date(to).toISOString()}): swap them.`)
  return { from, to }
}
