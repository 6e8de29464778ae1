import { describe, expect, it } from 'vitest'
import { isRequestId, newRequestId, requestIdTime } from './id.ts'

describe('request ids', () => {
  it('are UUIDv7 that carry their arrival time', () => {
    const at = Date.UTC(2026, 11, 1, 14, 3, 5, 123)
    const id = newRequestId(at)
    expect(isRequestId(id)).toBe(true)
    expect(requestIdTime(id)).toBe(at)
  })

  it('differ for the same millisecond and sort by time', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newRequestId(1_700_000_000_000)))
    expect(ids.size).toBe(1000)
    expect(newRequestId(1_700_000_000_000) < newRequestId(1_700_000_000_001)).toBe(true)
  })

  it('carry the time they are given when it goes back and forth, and random digits in every random place', () => {
    const times = [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_000, 0, 281_474_976_710_655]
    for (const at of times) {
      const id = newRequestId(at)
      expect(isRequestId(id)).toBe(true)
      expect(requestIdTime(id)).toBe(at)
    }
    // 5,000 ids (several refills of the random pool), one millisecond: every random hex place
    // takes all 16 digits, the variant place only 8, 9, a and b.
    const ids = Array.from({ length: 5_000 }, () => newRequestId(1_700_000_000_000))
    expect(new Set(ids).size).toBe(ids.length)
    const randomPlaces = [15, 16, 17, 20, 21, 22, ...Array.from({ length: 12 }, (_, index) => 24 + index)]
    for (const place of randomPlaces) expect(new Set(ids.map((id) => id[place])).size, `place ${place}`).toBe(16)
    expect([...new Set(ids.map((id) => id[19]))].sort()).toEqual(['8', '9', 'a', 'b'])
  })

  it('refuses what is not one', () => {
    expect(isRequestId('not-an-id')).toBe(false)
    expect(isRequestId('0197a1b2-c3d4-4e5f-8a9b-0123456789ab')).toBe(false)
  })
})
