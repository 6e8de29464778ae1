import { describe, expect, it } from 'vitest'
import { alignScores, minuteOf, seriesColour, SERIES_COLOURS } from './scores.js'

const point = (at: string, score: number) => ({ at, score, state: 'healthy' as const, held: false, weight: 1, error_penalty: 0, latency_penalty: 0, utilisation: 0, recovery: 0, requests: 0, errors: 0 })

describe('alignScores', () => {
  it('puts every node on one axis of whole minutes, with gaps where a node has no snapshot', () => {
    const { xs, byNode } = alignScores([
      { node_id: 'a', points: [point('2025-03-01T00:00:10Z', 90), point('2025-03-01T00:02:00Z', 70)] },
      { node_id: 'b', points: [point('2025-03-01T00:01:59Z', 80)] },
    ])
    const minute = Date.parse('2025-03-01T00:00:00Z') / 1000
    expect(xs).toEqual([minute, minute + 60, minute + 120])
    expect(byNode.map((node) => node.values)).toEqual([[90, null, 70], [null, 80, null]])
    expect(byNode[1]!.points[1]!.at).toBe('2025-03-01T00:01:59Z')
  })

  it('sorts the axis, keeps the later point of a minute and leaves out one whose time is not a time', () => {
    const { xs, byNode } = alignScores([{ node_id: 'a', points: [point('2025-03-01T00:05:00Z', 1), point('2025-03-01T00:01:00Z', 2), point('2025-03-01T00:01:30Z', 3), point('garbage', 4)] }])
    expect(xs).toEqual([Date.parse('2025-03-01T00:01:00Z') / 1000, Date.parse('2025-03-01T00:05:00Z') / 1000])
    expect(byNode[0]!.values).toEqual([3, 1])
  })

  it('has an empty axis for no series or no points', () => {
    expect(alignScores([])).toEqual({ xs: [], byNode: [] })
    expect(alignScores([{ node_id: 'a', points: [] }])).toEqual({ xs: [], byNode: [{ values: [], points: [] }] })
  })

  it('reads a minute, and none for a time that is not one', () => {
    expect(minuteOf('1970-01-01T00:01:59.999Z')).toBe(60)
    expect(minuteOf('')).toBeNull()
  })

  it('colours the nodes in turn, repeating past the palette', () => {
    expect(seriesColour(0)).toBe(SERIES_COLOURS[0])
    expect(seriesColour(SERIES_COLOURS.length + 1)).toBe(SERIES_COLOURS[1])
  })
})
