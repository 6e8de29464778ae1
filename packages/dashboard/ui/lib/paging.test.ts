import { describe, expect, it } from 'vitest'
import { pageRange, pageSteps } from './paging.js'

describe('the pager', () => {
  it('counts the items shown from 1, never past the total', () => {
    expect(pageRange(0, 25, 120)).toBe('1–25 of 120')
    expect(pageRange(100, 20, 120)).toBe('101–120 of 120')
    expect(pageRange(100, 50, 120)).toBe('101–120 of 120')
  })

  it('says nothing when nothing is shown (an offset past the end)', () => {
    expect(pageRange(200, 0, 120)).toBe('')
  })

  it('steps a page back (not below 0) and forward (not past the total)', () => {
    expect(pageSteps(0, 25, 120)).toEqual({ previous: null, next: 25 })
    expect(pageSteps(10, 25, 120)).toEqual({ previous: 0, next: 35 })
    expect(pageSteps(100, 25, 120)).toEqual({ previous: 75, next: null })
    expect(pageSteps(0, 25, 25)).toEqual({ previous: null, next: null })
    expect(pageSteps(0, 25, 0)).toEqual({ previous: null, next: null })
  })
})
