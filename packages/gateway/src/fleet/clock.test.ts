import { describe, expect, it } from 'vitest'
import { PeerClocks } from './clock.ts'

describe("a peer's clock offset", () => {
  it('is the midpoint estimate of the round trip with the least doubt', () => {
    const clocks = new PeerClocks()
    expect(clocks.offset('node-b')).toBe(0)
    // node-b runs 5 s ahead; a slow round trip (asymmetric: 300 ms out, 10 ms back) misleads by 145 ms.
    clocks.sample('node-b', 1_000, 1_000 + 300 + 5_000, 1_310)
    expect(clocks.offset('node-b')).toBe(5_145)
    // A quick one (2 ms each way) wins.
    clocks.sample('node-b', 2_000, 2_002 + 5_000, 2_004)
    expect(clocks.offset('node-b')).toBe(5_000)
    clocks.sample('node-c', 2_000, 2_001 - 1_500, 2_002)
    expect(clocks.offset('node-c')).toBe(-1_500)
    expect(clocks.widest()).toBe(5_000)
    // A time stamp by node-b's clock, on this node's.
    expect(clocks.toLocal('node-b', 10_000)).toBe(5_000)
  })

  it('is none that can be told when it lies within half the round trip', () => {
    const clocks = new PeerClocks()
    clocks.sample('node-b', 1_000, 1_012, 1_030)
    expect(clocks.offset('node-b')).toBe(0)
    clocks.sample('node-b', 2_000, 2_040, 2_020)
    expect(clocks.offset('node-b')).toBe(30)
  })

  it('keeps the latest samples only, and forgets a peer that left', () => {
    const clocks = new PeerClocks()
    clocks.sample('node-b', 0, 1_000, 0)
    for (let index = 1; index <= 8; index++) clocks.sample('node-b', index * 1_000, index * 1_000 + 1 + 200, index * 1_000 + 2)
    // The first sample (round trip 0) was pushed out by eight later ones.
    expect(clocks.offset('node-b')).toBe(200)
    clocks.forget('node-b')
    expect(clocks.offset('node-b')).toBe(0)
  })
})
