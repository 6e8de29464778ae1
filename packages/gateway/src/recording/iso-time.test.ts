import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createIsoTime } from './iso-time.ts'

describe('the record time formatter', () => {
  it('writes any time as toISOString does, in any order, within and across minutes', () => {
    const near = Date.UTC(2026, 11, 1, 23, 59, 58, 999)
    const time = fc.oneof(
      fc.integer({ min: near - 120_000, max: near + 120_000 }),
      fc.integer({ min: -62_198_755_200_000, max: 253_402_300_799_999 }),
      fc.double({ min: near - 1000, max: near + 1000, noNaN: true }),
    )
    fc.assert(
      fc.property(fc.array(time, { minLength: 1, maxLength: 50 }), (times) => {
        const isoTime = createIsoTime()
        for (const ms of times) expect(isoTime(ms)).toBe(new Date(ms).toISOString())
      }),
      { numRuns: 300 },
    )
  })
})
