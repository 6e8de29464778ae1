import { describe, expect, it } from 'vitest'
import { goDuration, rfc3339 } from '../reply/format.ts'
import { buildReply, splitForStream } from '../reply/content.ts'
import { sampleLatency, seededRandom } from './random.ts'
import { RateWindows } from './rate-window.ts'

describe('goDuration', () => {
  it.each([[0, '0ms'], [20, '20ms'], [1000, '1s'], [1500, '1.5s'], [360_000, '6m0s'], [90_500, '1m30.5s'], [3_723_000, '1h2m3s']])(
    '%d ms is %s', (milliseconds, text) => expect(goDuration(milliseconds)).toBe(text))
})

describe('rfc3339', () => {
  it('rounds up to whole seconds without fractions', () => {
    expect(rfc3339(Date.UTC(2025, 0, 2, 3, 4, 5, 1))).toBe('2025-01-02T03:04:06Z')
  })
})

describe('sampleLatency', () => {
  it('draws a log-normal with the given median and 99th percentile', () => {
    const random = seededRandom(3)
    const samples = Array.from({ length: 20_001 }, () => sampleLatency({ p50: 100, p99: 1000 }, random)).sort((a, b) => a - b)
    expect(samples[10_000]).toBeGreaterThan(90)
    expect(samples[10_000]).toBeLessThan(110)
    expect(samples[19_800]).toBeGreaterThan(800)
    expect(samples[19_800]).toBeLessThan(1250)
  })

  it('keeps mean ± jitter within bounds and never negative', () => {
    const random = seededRandom(4)
    for (let index = 0; index < 1000; index += 1) {
      const value = sampleLatency({ mean: 5, jitter: 10 }, random)
      expect(value).toBeGreaterThanOrEqual(0)
      expect(value).toBeLessThanOrEqual(15)
    }
  })
})

describe('RateWindows', () => {
  it('frees requests as they leave the one-minute window', () => {
    const windows = new RateWindows()
    expect(windows.check('k', 0, 1, 2, undefined).allowed).toBe(true)
    expect(windows.check('k', 10_000, 1, 2, undefined).allowed).toBe(true)
    const refused = windows.check('k', 20_000, 1, 2, undefined)
    expect(refused).toMatchObject({ allowed: false, kind: 'requests', retryAfterMs: 40_000 })
    expect(windows.check('k', 60_001, 1, 2, undefined).allowed).toBe(true)
  })

  it('waits for enough tokens to expire', () => {
    const windows = new RateWindows()
    windows.check('k', 0, 60, undefined, 100)
    windows.check('k', 30_000, 30, undefined, 100)
    expect(windows.check('k', 40_000, 50, undefined, 100)).toMatchObject({ allowed: false, kind: 'tokens', retryAfterMs: 20_000, requested: 50 })
  })
})

describe('replies', () => {
  it('split into stream pieces that join back to the text', () => {
    const reply = buildReply('openai', 'gpt-4o', 120, undefined)
    const pieces = splitForStream(reply.text)
    expect(pieces.join('')).toBe(reply.text)
    expect(pieces.length).toBeGreaterThan(10)
    expect(reply.text.length).toBe(480)
  })
})
