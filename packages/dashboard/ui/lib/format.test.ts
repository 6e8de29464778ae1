import { describe, expect, it } from 'vitest'
import { count, dueIn, duration, httpStatusState, labelOf, percent, plural, reasonLabel, relative, stamp, stateLabel } from './format.js'

describe('duration', () => {
  it('reads seconds, minutes, hours and days', () => {
    expect(duration(0)).toBe('0 s')
    expect(duration(45)).toBe('45 s')
    expect(duration(12 * 60)).toBe('12 min')
    expect(duration(3 * 3600 + 20 * 60)).toBe('3 h 20 min')
    expect(duration(3 * 3600)).toBe('3 h')
    expect(duration(86400)).toBe('1 day')
    expect(duration(2 * 86400 + 4 * 3600)).toBe('2 days 4 h')
  })

  it('rounds to the unit shown before splitting it (regression: 3599 s read "60 min", 86399 s "23 h 60 min")', () => {
    expect(duration(59.6)).toBe('1 min')
    expect(duration(3599)).toBe('1 h')
    expect(duration(3570)).toBe('1 h')
    expect(duration(86399)).toBe('1 day')
    expect(duration(2 * 86400 - 1)).toBe('2 days')
  })

  it('has no number for missing, NaN or infinite seconds, and none below zero', () => {
    expect(duration(null)).toBe('—')
    expect(duration(undefined)).toBe('—')
    expect(duration(Number.NaN)).toBe('—')
    expect(duration(Number.POSITIVE_INFINITY)).toBe('—')
    expect(duration(-30)).toBe('0 s')
  })

  it('reads a huge span in days', () => {
    expect(duration(400 * 86400)).toBe('400 days')
  })
})

describe('count', () => {
  it('keeps small numbers as they are and shortens large ones', () => {
    expect(count(0)).toBe('0')
    expect(count(312)).toBe('312')
    expect(count(999)).toBe('999')
    expect(count(1000)).toBe('1.0K')
    expect(count(1849)).toBe('1.8K')
    expect(count(12_400)).toBe('12K')
    expect(count(4_200_000)).toBe('4.2M')
    expect(count(3_100_000_000)).toBe('3.1B')
    expect(count(-2500)).toBe('-2.5K')
  })

  it('moves up a unit instead of reading 1000 of one (regression: 999,999 read "1000K", 9,999 "10.0K")', () => {
    expect(count(9_999)).toBe('10K')
    expect(count(999_499)).toBe('999K')
    expect(count(999_999)).toBe('1.0M')
    expect(count(999_999_999)).toBe('1.0B')
  })

  it('reads huge numbers in billions, and has no number for missing or NaN', () => {
    expect(count(1e15)).toBe('1000000B')
    expect(count(null)).toBe('—')
    expect(count(undefined)).toBe('—')
    expect(count(Number.NaN)).toBe('—')
  })
})

describe('percent', () => {
  it('reads a share as a percentage', () => {
    expect(percent(0)).toBe('0.0%')
    expect(percent(0.125)).toBe('12.5%')
    expect(percent(1)).toBe('100.0%')
    expect(percent(0.5, 0)).toBe('50%')
  })

  it('has no number for a missing or NaN share', () => {
    expect(percent(null)).toBe('—')
    expect(percent(undefined)).toBe('—')
    expect(percent(Number.NaN)).toBe('—')
  })
})

describe('relative and dueIn', () => {
  const now = Date.parse('2025-03-01T12:00:00Z')

  it('read instants against now, in seconds, ms or ISO', () => {
    expect(relative('2025-03-01T11:57:00Z', now)).toBe('3 min ago')
    expect(relative(now / 1000 + 25, now)).toBe('in 25 s')
    expect(relative(now + 500, now)).toBe('now')
    expect(dueIn('2025-03-01T12:00:25Z', now)).toBe('in 25 s')
    expect(dueIn(now, now)).toBe('due now')
    expect(dueIn('2025-03-01T11:59:12Z', now)).toBe('overdue 48 s')
  })

  it('have no time for a missing or unreadable instant (not "— ago")', () => {
    expect(relative(null, now)).toBe('—')
    expect(relative('not a time', now)).toBe('—')
    expect(dueIn(undefined, now)).toBe('—')
    expect(dueIn('', now)).toBe('—')
  })
})

describe('stamp', () => {
  it('has no time for a missing or unreadable instant, where Intl would throw', () => {
    expect(stamp(null)).toBe('—')
    expect(stamp('yesterday')).toBe('—')
    expect(() => new Intl.DateTimeFormat('en-US', { second: '2-digit' }).format(new Date(Number.NaN))).toThrow(RangeError)
  })

  it('reads the same instant the same in seconds, ms and ISO', () => {
    const at = Date.parse('2025-03-01T12:34:56Z')
    expect(stamp(at)).toBe(stamp(at / 1000))
    expect(stamp(at)).toBe(stamp('2025-03-01T12:34:56Z'))
    expect(stamp(at)).toMatch(/56/)
  })
})

describe('labels', () => {
  it('name reasons, states and statuses, and leave unknown values as they are', () => {
    expect(reasonLabel('credential')).toBe('key rejected')
    expect(reasonLabel('brand_new_class')).toBe('brand_new_class')
    expect(reasonLabel(null)).toBe('')
    expect(reasonLabel(undefined)).toBe('')
    expect(stateLabel('failed')).toBe('Failed')
    expect(stateLabel('melting')).toBe('melting')
  })

  it('never find Object.prototype\'s members (regression: "constructor" read as a function)', () => {
    expect(reasonLabel('constructor')).toBe('constructor')
    expect(stateLabel('toString')).toBe('toString')
    expect(labelOf({}, '__proto__')).toBe('__proto__')
  })

  it('colour an HTTP status as a route state', () => {
    expect([200, 302, 399, 400, 429, 499, 500, 503].map(httpStatusState)).toEqual(['healthy', 'healthy', 'healthy', 'degraded', 'degraded', 'degraded', 'failed', 'failed'])
  })

  it('count with the right plural', () => {
    expect(plural(0, 'node')).toBe('0 nodes')
    expect(plural(1, 'node')).toBe('1 node')
    expect(plural(2, 'node')).toBe('2 nodes')
  })
})
