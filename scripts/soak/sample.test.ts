/** The soak's resource summary: process age from /proc, and the flatness verdict over warmed-up processes. */
import { describe, expect, it } from 'vitest'
import { flatness, processAgeS, windows, type ResourceSample } from './sample.ts'

const MINUTE = 60_000
const sample = (atMin: number, ageMin: number, rssMb: number, fds = 40): ResourceSample => ({ at: atMin * MINUTE, nodeId: 'node-1', pid: 1, ageS: ageMin * 60, rssMb, fds, loopP99Ms: null, loopMaxMs: null })

describe('processAgeS', () => {
  it('reads the start time after the command name, spaces and parentheses in it included', () => {
    // Field 22 (starttime) is the 20th after the name; 12,345 ticks = 123.45 s after boot.
    const stat = `4242 (node (my app)) S 1 4242 4242 0 -1 4194560 ${Array.from({ length: 12 }, () => '0').join(' ')} 12345 0 0`
    expect(processAgeS(stat, '200.00 350.00')).toBeCloseTo(76.55, 5)
  })
})

describe('flatness', () => {
  it('leaves young processes out of the verdict and reports them beside it', () => {
    // Warmed-up processes hold 140 MB throughout; young ones 185 MB, more of them in the last window.
    const samples = [
      ...[3, 4, 5, 6].map((at) => sample(at, at, 140)),
      sample(4, 0.5, 185),
      ...[26, 27, 28, 29].map((at) => sample(at, 5, 141)),
      ...[26, 27, 28, 29].map((at) => sample(at, 1, 185)),
    ]
    const flat = flatness(samples, 0, 30 * MINUTE)
    expect(flat.compared).toEqual({ early: 4, late: 4 })
    expect(flat.rssGrowthPercent).toBeCloseTo(100 / 140, 5)
    expect(flat.allSamples.rssGrowthPercent).toBeGreaterThan(10)
    expect(flat.passed).toBe(true)
  })

  it('fails growth in warmed-up processes, and a side with no samples to compare', () => {
    const growing = [...[3, 4, 5, 6].map((at) => sample(at, at, 140)), ...[26, 27, 28, 29].map((at) => sample(at, 20, 160))]
    expect(flatness(growing, 0, 30 * MINUTE).passed).toBe(false)
    const onlyYoung = [...[3, 4].map((at) => sample(at, 1, 140)), ...[26, 27].map((at) => sample(at, 1, 140))]
    expect(flatness(onlyYoung, 0, 30 * MINUTE).passed).toBe(false)
  })

  it('shows the warmed-up median per window', () => {
    const rows = windows([sample(1, 1, 185), sample(3, 3, 140), sample(4, 4, 142)], 0)
    expect(rows[0]).toMatchObject({ samples: 3, rssMedianMb: 142, rssWarmMedianMb: 141 })
  })
})
