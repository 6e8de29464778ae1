import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { compareVersions, createClock } from './clock.ts'

describe('createClock', () => {
  it('stamps versions that always increase, even when the wall clock stands still or steps back', () => {
    const clock = createClock('node-a')
    const first = clock.tick(1_000)
    const same = clock.tick(1_000)
    const back = clock.tick(900)
    expect(first).toEqual({ wallMs: 1_000, counter: 0, nodeId: 'node-a' })
    expect(compareVersions(same, first)).toBeGreaterThan(0)
    expect(compareVersions(back, same)).toBeGreaterThan(0)
    expect(back.wallMs).toBe(1_000)
  })

  it('stamps a version newer than any it observed from another node', () => {
    const clock = createClock('node-a')
    clock.tick(1_000)
    const remote = { wallMs: 5_000, counter: 7, nodeId: 'node-b' }
    clock.observe(remote, 2_000)
    expect(compareVersions(clock.tick(2_000), remote)).toBeGreaterThan(0)
  })

  it('is newer than everything it made or saw, for any sequence of ticks and observations (property)', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('tick' as const), now: fc.integer({ min: 0, max: 10_000 }) }),
      fc.record({
        kind: fc.constant('observe' as const),
        now: fc.integer({ min: 0, max: 10_000 }),
        remote: fc.record({ wallMs: fc.integer({ min: 0, max: 10_000 }), counter: fc.nat(20), nodeId: fc.constantFrom('node-b', 'node-c') }),
      }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const clock = createClock('node-a')
        const seen = []
        for (const item of steps) {
          if (item.kind === 'tick') seen.push(clock.tick(item.now))
          else {
            clock.observe(item.remote, item.now)
            seen.push(item.remote)
          }
        }
        const next = clock.tick(0)
        return seen.every((version) => compareVersions(next, version) > 0)
      }),
    )
  })

  it('orders by wall time, then counter, then node id', () => {
    expect(compareVersions({ wallMs: 1, counter: 9, nodeId: 'z' }, { wallMs: 2, counter: 0, nodeId: 'a' })).toBeLessThan(0)
    expect(compareVersions({ wallMs: 2, counter: 1, nodeId: 'a' }, { wallMs: 2, counter: 0, nodeId: 'z' })).toBeGreaterThan(0)
    expect(compareVersions({ wallMs: 2, counter: 0, nodeId: 'b' }, { wallMs: 2, counter: 0, nodeId: 'a' })).toBeGreaterThan(0)
    expect(compareVersions({ wallMs: 2, counter: 0, nodeId: 'a' }, { wallMs: 2, counter: 0, nodeId: 'a' })).toBe(0)
  })
})
