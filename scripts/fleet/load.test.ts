import { describe, expect, it } from 'vitest'
import { loadLine, type LoadTally } from './load.ts'

const tally = (sent: number, served: number, failed: Record<string, number> = {}, unreachable = 0, timedOut = 0): LoadTally => ({ sent, served, failed, unreachable, timedOut })

describe("the launcher's load line", () => {
  it('shows what each node did since the last line, and a dead node as down, not its old counts', () => {
    const nodes = [
      { nodeId: 'node-1', url: 'u1', running: true },
      { nodeId: 'node-2', url: 'u2', running: true },
    ]
    const first = loadLine(nodes, new Map([['u1', tally(10, 10)], ['u2', tally(9, 8, { 502: 1 })]]), new Map())
    expect(first.line).toBe('node-1: 10 sent, 10 served | node-2: 9 sent, 8 served, failed 1 x 502')
    const later = new Map([['u1', tally(25, 25)], ['u2', tally(12, 10, { 502: 1 }, 1)]])
    const second = loadLine([nodes[0]!, { ...nodes[1]!, running: false }], later, first.seen)
    expect(second.line).toBe('node-1: 15 sent, 15 served | node-2: down')
    const third = loadLine(nodes, new Map([['u1', tally(40, 40)], ['u2', tally(15, 13, { 502: 1 }, 1)]]), second.seen)
    expect(third.line).toBe('node-1: 15 sent, 15 served | node-2: 3 sent, 3 served')
  })

  it('tells a node that did not answer in time from one that could not be reached', () => {
    const nodes = [{ nodeId: 'node-1', url: 'u1', running: true }]
    expect(loadLine(nodes, new Map([['u1', tally(10, 6, {}, 1, 3)]]), new Map()).line).toBe('node-1: 10 sent, 6 served, 1 unreachable, 3 timed out')
  })
})
