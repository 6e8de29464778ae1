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

  it('refuses what is not one', () => {
    expect(isRequestId('not-an-id')).toBe(false)
    expect(isRequestId('0197a1b2-c3d4-4e5f-8a9b-0123456789ab')).toBe(false)
  })
})
