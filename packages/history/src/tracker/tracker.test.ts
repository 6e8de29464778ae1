import { describe, expect, it } from 'vitest'
import { NodeTracker } from './tracker.ts'
import type { RequestOutcome } from './requests.ts'
import type { RouteView } from './types.ts'

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0)

const route = (fields: Partial<RouteView> = {}): RouteView => ({
  provider: 'openai',
  model: 'gpt-4o',
  keyId: 'o1',
  keyName: 'prod-1',
  state: 'healthy',
  held: false,
  weight: 100,
  errorRate: 0,
  latencyMs: 120,
  parts: { errorPenalty: 0, latencyPenalty: 0, utilisation: 0, recoveryProgress: 0 },
  ...fields,
})

const outcome = (fields: Partial<RequestOutcome> = {}): RequestOutcome => ({
  at: T0,
  namedProvider: null,
  model: 'gpt-4o',
  attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o1', failure_class: null }],
  served: { provider: 'openai', model: 'gpt-4o', key_id: 'o1' },
  failure: null,
  rerouteEnabled: true,
  routing: { movedOff: false, addedFallbackServed: false, pinnedKeptFailed: false },
  ...fields,
})

describe('NodeTracker requests', () => {
  it('counts requests per direction and minute, and per route in the snapshot, with no episode open', () => {
    const tracker = new NodeTracker('n')
    const views = [route(), route({ keyId: 'o2', keyName: 'prod-2' })]
    tracker.routes(views, T0)
    for (let index = 0; index < 3; index++) expect(tracker.request(outcome())).toEqual({ events: [], episodes: [] })
    tracker.request(outcome({ attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o2', failure_class: 'rate_limit' }, { provider: 'openai', model: 'gpt-4o', key_id: 'o1', failure_class: null }] }))
    tracker.request(outcome({ namedProvider: 'openai', served: null, failure: 'upstream', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o2', failure_class: 'server_error' }] }))
    // Excluded (a caller fault): counts nowhere, but its attempt was traffic on its route.
    tracker.request(outcome({ served: null, failure: 'excluded', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o2', failure_class: 'caller_fault' }] }))
    tracker.request(outcome({ model: 'claude', served: { provider: 'anthropic', model: 'claude', key_id: 'a1' }, attempts: [{ provider: 'anthropic', model: 'claude', key_id: 'a1', failure_class: null }], routing: { movedOff: true, addedFallbackServed: false, pinnedKeptFailed: false } }))
    const counts = tracker.takeCounts(T0 + 60_000)
    expect(counts).toHaveLength(2)
    expect(counts).toContainEqual({ at: T0 + 60_000, provider: 'openai', model: 'gpt-4o', served: 4, failed: 1, redirected: 0, fallbackServed: 0, routingPicked: 4, callerNamed: 1, keptFailing: 0, checks: 0 })
    expect(counts).toContainEqual({ at: T0 + 60_000, provider: 'anthropic', model: 'claude', served: 1, failed: 0, redirected: 1, fallbackServed: 0, routingPicked: 1, callerNamed: 0, keptFailing: 0, checks: 0 })
    expect(tracker.takeCounts(T0 + 120_000)).toEqual([])
    const rows = tracker.snapshot(views, T0 + 60_000)
    const byEntity = Object.fromEntries(rows.map((row) => [row.entity, [row.requests, row.errors]]))
    expect(byEntity).toEqual({ 'route:openai:gpt-4o:o1': [4, 0], 'route:openai:gpt-4o:o2': [3, 2], 'direction:openai:gpt-4o': [7, 2] })
    // The next snapshot starts from nothing.
    expect(tracker.snapshot(views, T0 + 120_000).map((row) => row.requests)).toEqual([0, 0, 0])
  })

  it('puts failed requests on the open episodes they ran into, with an event each, and names the cause of the next episode', () => {
    const tracker = new NodeTracker('n')
    tracker.request(outcome({ served: null, failure: 'upstream', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o1', failure_class: 'server_error' }] }))
    const opened = tracker.routes([route({ state: 'failed' }), route({ keyId: 'o2', state: 'failed' })], T0 + 5_000)
    const episode = opened.episodes.find((each) => each.entity === 'route:openai:gpt-4o:o1')!
    expect(episode.reasons).toEqual(['server_error'])
    const direction = opened.episodes.find((each) => each.entity === 'direction:openai:gpt-4o')!
    const failed = tracker.request(
      outcome({ at: T0 + 6_000, namedProvider: 'openai', served: null, failure: 'upstream', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o1', failure_class: 'timeout' }], routing: { movedOff: false, addedFallbackServed: false, pinnedKeptFailed: true } }),
    )
    expect(failed.episodes).toContain(episode)
    expect(failed.episodes).toContain(direction)
    expect(episode).toMatchObject({ requestsFailed: 1, pinnedKeptFailed: 1, failedNoAlternative: 1, lastRequestAt: T0 + 6_000, reasons: ['server_error', 'timeout'] })
    expect(failed.events.map((event) => [event.kind, event.entity, event.detail.kept_on_failing, event.detail.failure_class])).toEqual([
      ['request:failed', 'route:openai:gpt-4o:o1', true, 'timeout'],
      ['request:failed', 'direction:openai:gpt-4o', true, 'timeout'],
    ])
    // A served request on the episode's route only moves its last traffic.
    const served = tracker.request(outcome({ at: T0 + 7_000 }))
    expect(served.events).toEqual([])
    expect(served.episodes).toContain(episode)
    expect(episode.lastRequestAt).toBe(T0 + 7_000)
    expect(episode.requestsFailed).toBe(1)
  })
})
