import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { countSources, type Range } from './counts.ts'

const MINUTE = 60_000
const HOUR = 3_600_000

describe('where a window is counted from', () => {
  it('covers the window once: hours and minutes whole and after the counts began, rows for the rest', () => {
    const base = Date.parse('2026-12-01T00:00:00Z')
    const time = fc.integer({ min: 0, max: 3 * 86_400_000 }).map((offset) => base + offset)
    const aligned = fc.integer({ min: 0, max: 3 * 24 * 60 }).map((minutes) => base + minutes * MINUTE)
    fc.assert(
      fc.property(fc.oneof(time, aligned), fc.oneof(time, aligned), fc.oneof(aligned, fc.constant(Number.POSITIVE_INFINITY), fc.constant(0)), (a, b, since) => {
        const [from, to] = a <= b ? [a, b] : [b, a]
        const { rows, minutes, hours } = countSources(from, to, since)
        const all: (Range & { unit: number })[] = [...rows.map((range) => ({ ...range, unit: 1 })), ...minutes.map((range) => ({ ...range, unit: MINUTE })), ...hours.map((range) => ({ ...range, unit: HOUR }))]
        all.sort((x, y) => x.from - y.from)
        // Back to back from `from` to `to`, the last one closed.
        expect(all[0]!.from).toBe(from)
        for (let index = 1; index < all.length; index++) expect(all[index]!.from).toBe(all[index - 1]!.to)
        expect(all[all.length - 1]).toMatchObject({ to, closed: true })
        for (const range of all.slice(0, -1)) expect(range.closed ?? false).toBe(false)
        for (const range of [...minutes, ...hours]) expect(range.from).toBeGreaterThanOrEqual(since)
        for (const range of all) {
          expect(range.from).toBeLessThanOrEqual(range.to)
          expect(range.from % range.unit).toBe(0)
          expect(range.to % range.unit).toBe(0)
        }
        // Rows only for the parts of a minute at either end: no whole minute the counts cover fits in a range read from rows.
        for (const range of rows) {
          const minute = Math.max(Math.ceil(range.from / MINUTE), Math.ceil(since / MINUTE)) * MINUTE
          expect(minute + MINUTE).toBeGreaterThan(range.to)
        }
      }),
      { numRuns: 2_000 },
    )
  })
})
