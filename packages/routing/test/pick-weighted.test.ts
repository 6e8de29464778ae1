import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { pickWeighted } from './pick-weighted.ts'

describe('pickWeighted', () => {
  it('returns -1 for nothing and 0 for one', () => {
    expect(pickWeighted([], () => 0.3)).toBe(-1)
    expect(pickWeighted([5], () => 0.3)).toBe(0)
  })

  it('maps the random draw onto cumulative weights', () => {
    expect(pickWeighted([1, 3], () => 0)).toBe(0)
    expect(pickWeighted([1, 3], () => 0.24)).toBe(0)
    expect(pickWeighted([1, 3], () => 0.26)).toBe(1)
  })

  it('never picks a zero weight while a positive one exists, and always returns a valid index', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(10), { minLength: 1, maxLength: 20 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (weights, draw) => {
        const picked = pickWeighted(weights, () => draw)
        expect(picked).toBeGreaterThanOrEqual(0)
        expect(picked).toBeLessThan(weights.length)
        if (weights.some((weight) => weight > 0)) expect(weights[picked]).toBeGreaterThan(0)
      }),
    )
  })
})
