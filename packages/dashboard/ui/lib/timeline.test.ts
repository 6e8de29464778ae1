import { describe, expect, it } from 'vitest'
import { cellsOf, dotTitle, failuresText, fillPercent, laneBar, nodesText, timelineGrid } from './timeline.js'

const bucket = (at: string, fields: Partial<Parameters<typeof dotTitle>[0]> = {}) => ({ at, state: 'healthy' as const, held: false, share: 1, nodes: 3, requests: 0, failed: 0, ...fields })

describe('failuresText', () => {
  it('reads no traffic, none failed, some failed', () => {
    expect(failuresText({})).toBe('no traffic')
    expect(failuresText({ requests: 0, failed: 0 })).toBe('no traffic')
    expect(failuresText({ requests: 1 })).toBe('none of 1 attempt failed')
    expect(failuresText({ requests: 40, failed: 0 })).toBe('none of 40 attempts failed')
    expect(failuresText({ requests: 120, failed: 3 })).toBe('3 of 120 attempts failed')
  })
})

describe('the grid', () => {
  const timeline = { from: '2025-03-01T00:00:00Z', to: '2025-03-01T01:00:00Z', bucket_seconds: 600 }

  it('has a column per bucket of the window, and clamps instants to it', () => {
    const grid = timelineGrid(timeline)
    expect(grid.slots).toBe(6)
    expect(grid.slotOf('2025-03-01T00:00:00Z')).toBe(0)
    expect(grid.slotOf('2025-03-01T00:19:59Z')).toBe(1)
    expect(grid.slotOf('2025-03-01T00:59:59Z')).toBe(5)
    expect(grid.slotOf('2025-03-01T02:00:00Z')).toBe(5)
    expect(grid.slotOf('2025-02-28T23:00:00Z')).toBe(0)
    expect(grid.slotOf('not a time')).toBeNull()
  })

  it('has one column when the answer makes no grid (zero-size buckets, an empty or unreadable window)', () => {
    expect(timelineGrid({ ...timeline, bucket_seconds: 0 }).slots).toBe(1)
    expect(timelineGrid({ ...timeline, to: timeline.from }).slots).toBe(1)
    expect(timelineGrid({ ...timeline, from: 'garbage' }).slots).toBe(1)
    expect(timelineGrid({ ...timeline, bucket_seconds: 7200 }).slots).toBe(1)
  })

  it('lays a row\'s buckets in their columns, a later one winning a shared column and an unreadable one left out', () => {
    const grid = timelineGrid(timeline)
    const first = bucket('2025-03-01T00:10:00Z')
    const second = bucket('2025-03-01T00:15:00Z', { state: 'failed' })
    const cells = cellsOf([first, second, bucket('garbage'), bucket('2025-03-01T00:50:00Z')], grid)
    expect(cells.map((cell) => cell?.at ?? null)).toEqual([null, '2025-03-01T00:15:00Z', null, null, null, '2025-03-01T00:50:00Z'])
    expect(cellsOf([], grid)).toEqual([null, null, null, null, null, null])
  })
})

describe('a dot', () => {
  it('says on how many nodes the worst state was seen', () => {
    expect(nodesText({ share: 1, nodes: 1 })).toBe('on the only node reporting')
    expect(nodesText({ share: 1, nodes: 3 })).toBe('on all 3 nodes')
    expect(nodesText({ share: 2 / 3, nodes: 3 })).toBe('on 2 of 3 nodes')
  })

  it('titles its state, nodes, hold and failures', () => {
    const title = dotTitle(bucket('2025-03-01T00:10:00Z', { state: 'failed', share: 1 / 3, held: true, requests: 9, failed: 2 }))
    expect(title).toMatch(/: Failed at worst, on 1 of 3 nodes, held; 2 of 9 attempts failed$/)
  })

  it('fills by its share, never below 15 %', () => {
    expect([0, 0.1, 0.5, 1].map(fillPercent)).toEqual([15, 15, 50, 100])
  })
})

describe('laneBar', () => {
  const from = Date.parse('2025-03-01T00:00:00Z')
  const to = Date.parse('2025-03-01T01:00:00Z')

  it('places an incident in the window, an open one running to its end', () => {
    expect(laneBar({ opened_at: '2025-03-01T00:15:00Z', closed_at: '2025-03-01T00:45:00Z' }, from, to)).toEqual({ left: 25, width: 50 })
    expect(laneBar({ opened_at: '2025-03-01T00:30:00Z', closed_at: null }, from, to)).toEqual({ left: 50, width: 50 })
  })

  it('clips to the window and keeps a blip clickable', () => {
    expect(laneBar({ opened_at: '2025-02-28T23:00:00Z', closed_at: '2025-03-01T02:00:00Z' }, from, to)).toEqual({ left: 0, width: 100 })
    expect(laneBar({ opened_at: '2025-03-01T00:30:00Z', closed_at: '2025-03-01T00:30:01Z' }, from, to).width).toBe(0.4)
    expect(laneBar({ opened_at: '2025-03-01T03:00:00Z', closed_at: null }, from, to)).toEqual({ left: 100, width: 0.4 })
  })

  it('fills the lane for an empty window rather than divide by zero', () => {
    expect(laneBar({ opened_at: '2025-03-01T00:30:00Z', closed_at: null }, from, from)).toEqual({ left: 0, width: 100 })
  })
})
