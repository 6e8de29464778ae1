import { describe, expect, it } from 'vitest'
import { gossipRows, lagText, ms } from './cluster.js'

describe('the Cluster page words', () => {
  it('reads a lag as people read it', () => {
    expect(ms(0.44)).toBe('0.4 ms')
    expect(ms(12.4)).toBe('12 ms')
    expect(ms(2_500)).toBe('2.5 s')
    expect(ms(Number.NaN)).toBe('—')
  })

  it('says none seen yet, or the quantiles', () => {
    expect(lagText({ count: 0, p50_ms: null, p99_ms: null, max_ms: null })).toBe('none seen yet')
    expect(lagText({ count: 40, p50_ms: 3.2, p99_ms: 48, max_ms: 1_200 })).toBe('3.2 ms / 48 ms (max 1.2 s)')
  })

  it('lists fleet-wide topics before regional ones', () => {
    const rows = gossipRows({ 'rate-limits/region/eu': { in: 1, out: 0, dropped: 0 }, trials: { in: 0, out: 0, dropped: 0 }, holds: { in: 3, out: 1, dropped: 0 } })
    expect(rows.map(([topic]) => topic)).toEqual(['holds', 'trials', 'rate-limits/region/eu'])
  })
})
