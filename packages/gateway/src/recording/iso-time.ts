/**
 * A time in ms as `Date#toISOString` writes it: the minute's prefix is formatted once and kept,
 * sparing each request record a Date (a third of building one).
 */

const MINUTE_MS = 60_000

/** A formatter that remembers the minute it formatted last. */
export function createIsoTime(): (ms: number) => string {
  let minuteStart = Number.NaN
  let prefix = ''
  return (ms) => {
    // Fractional ms are formatted whole, every time (Date truncates them).
    if (!Number.isInteger(ms)) return new Date(ms).toISOString()
    const intoMinute = ms - minuteStart
    if (!(intoMinute >= 0 && intoMinute < MINUTE_MS)) {
      const iso = new Date(ms).toISOString()
      // So are years outside 0000-9999 (a longer string).
      if (iso.length !== 24) return iso
      minuteStart = ms - (ms % MINUTE_MS + MINUTE_MS) % MINUTE_MS
      prefix = iso.slice(0, 17)
      return iso
    }
    const seconds = Math.floor(intoMinute / 1000)
    const millis = intoMinute - seconds * 1000
    return `${prefix}${seconds < 10 ? '0' : ''}${seconds}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`
  }
}
