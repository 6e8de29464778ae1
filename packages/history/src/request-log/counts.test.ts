import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { coverWindow } from '../queries/timeline.ts'
import { COUNT_SPANS } from './counts.ts'

const MINUTE = 60_000

describe('where a window of the log is counted from', () => {
  it('covers the window once: whole hours and minutes from the counts, rows only for the parts of a minute at either end', () => {
    const base = Date.parse('2026-12-01T00:00:00Z')
    const time = fc.integer({ min: 0, max: 3 * 86_400_000 }).map((offset) => base + offset)
    const aligned = fc.integer({ min: 0, max: 3 * 24 * 60 }).map((minutes) => base + minutes * MINUTE)
    fc.assert(
      fc.property(fc.oneof(time, aligned), fc.oneof(time, aligned), (a, b) => {
        const [from, to] = a <= b ? [a, b] : [b, a]
        const { blocks, snapshots: rows } = coverWindow(from, to, 3600, COUNT_SPANS)
        const all = [...blocks.map((block) => ({ from: block.fromMs, to: block.toMs, closed: false, unit: block.seconds * 1000 })), ...rows.map((range) => ({ from: range.fromMs, to: range.toMs, closed: range.closed, unit: 1 }))]
        all.sort((x, y) => x.from - y.from || x.to - y.to)
        // Back to back from `from` to `to`, only the last one closed.
        expect(all[0]!.from).toBe(from)
        for (let index = 1; index < all.length; index++) expect(all[index]!.from).toBe(all[index - 1]!.to)
        expect(all.at(-1)).toMatchObject({ to, closed: true })
        for (const range of all.slice(0, -1)) expect(range.closed).toBe(false)
        for (const range of all) {
          expect(range.from).toBeLessThanOrEqual(range.to)
          expect(range.from % range.unit).toBe(0)
          expect(range.to % range.unit).toBe(0)
        }
        // No whole minute fits in a range read from rows.
        for (const range of rows) expect(Math.ceil(range.fromMs / MINUTE) * MINUTE + MINUTE).toBeGreaterThan(range.toMs)
      }),
      { numRuns: 2_000 },
    )
  })
})
