import { describe, expect, it } from 'vitest'
import { groupRoutes, shownState } from './routes.js'
import { clusterTitle, droppedText } from './cluster.js'

const route = (provider: string, model: string, key_id: string) => ({ provider, model, key_id, key_name: key_id, state: 'healthy' as const, held: false, weight: 1, expected_share: 1, actual_share: 1, error_rate: 0, latency_ms: null, in_flight: 0 })

describe('the routes card', () => {
  it('groups routes by provider and model, in the order they first appear', () => {
    const groups = groupRoutes([route('openai', 'gpt-4o', 'a'), route('azure', 'gpt-4o', 'b'), route('openai', 'gpt-4o', 'c')])
    expect([...groups.keys()]).toEqual(['openai/gpt-4o', 'azure/gpt-4o'])
    expect(groups.get('openai/gpt-4o')!.map((member) => member.key_id)).toEqual(['a', 'c'])
    expect(groupRoutes(undefined).size).toBe(0)
  })

  it('shows a held route as failed, whatever its state', () => {
    expect(shownState('healthy', true)).toBe('failed')
    expect(shownState('recovering', false)).toBe('recovering')
  })
})

describe('the cluster page', () => {
  const view = { mode: 'fleet' as const, node: { node_id: 'a' }, members: [{ node_id: 'a', region: 'eu', since: '', last_seen: '', addresses: [] }], regions: { eu: ['a'] }, leaders: { eu: 'a' }, holds: 0, last_snapshot: null, dropped: {} }

  it('titles the fleet by its nodes and regions', () => {
    expect(clusterTitle(view)).toBe('Fleet: 1 node up, 1 region')
    expect(clusterTitle({ ...view, mode: 'standalone', members: [], regions: {} })).toBe('Standalone: 0 nodes up, 0 regions')
  })

  it('says what gossip dropped', () => {
    expect(droppedText({})).toBe('nothing')
    expect(droppedText({ too_big: 2, invalid: 0 })).toBe('too_big: 2, invalid: 0')
  })
})
