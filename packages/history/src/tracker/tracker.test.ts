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
    tracker.request(outcome({ namedProvider: 'openai', served: null, failure: 'upstream', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o2', failure_class: 'transient' }] }))
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
    tracker.request(outcome({ served: null, failure: 'upstream', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o1', failure_class: 'transient' }] }))
    const opened = tracker.routes([route({ state: 'failed' }), route({ keyId: 'o2', state: 'failed' })], T0 + 5_000)
    const episode = opened.episodes.find((each) => each.entity === 'route:openai:gpt-4o:o1')!
    expect(episode.reasons).toEqual(['transient'])
    const direction = opened.episodes.find((each) => each.entity === 'direction:openai:gpt-4o')!
    const failed = tracker.request(
      outcome({ at: T0 + 6_000, namedProvider: 'openai', served: null, failure: 'upstream', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'o1', failure_class: 'timeout' }], routing: { movedOff: false, addedFallbackServed: false, pinnedKeptFailed: true } }),
    )
    expect(failed.episodes).toContain(episode)
    expect(failed.episodes).toContain(direction)
    // The route's episode is inside its direction's (one incident): the request counts once, on the direction.
    expect(episode).toMatchObject({ requestsFailed: 0, pinnedKeptFailed: 0, lastRequestAt: T0 + 6_000, reasons: ['transient', 'timeout'] })
    // Kept on a failing provider while another served the model: avoidable, so not "nothing left".
    expect(direction).toMatchObject({ requestsFailed: 1, pinnedKeptFailed: 1, failedNoAlternative: 0 })
    expect(failed.events.map((event) => [event.kind, event.entity, event.detail.kept_on_failing, event.detail.failure_class])).toEqual([['request:failed', 'direction:openai:gpt-4o', true, 'timeout']])
    // A served request on the episode's route only moves its last traffic.
    const served = tracker.request(outcome({ at: T0 + 7_000 }))
    expect(served.events).toEqual([])
    expect(served.episodes).toContain(episode)
    expect(episode.lastRequestAt).toBe(T0 + 7_000)
    expect(direction.requestsFailed).toBe(1)
  })

  it('tells a whole-key hold its model is failing with nothing left only for the models the key serves (issue 36, item 1)', () => {
    const tracker = new NodeTracker('n')
    tracker.routes([route(), route({ model: 'gpt-4o-mini' }), route({ provider: 'groq', model: 'llama', keyId: 'g1' })], T0)
    const held = tracker.hold({ provider: 'openai', keyId: 'o1', model: null, state: 'held', reason: 'quota', message: 'You exceeded your current quota', since: T0, rung: 0, checks: 0, baseWaitMs: 30_000, releaseCause: null }, 'local', T0).episodes[0]!
    const failed = (at: number, model: string, provider = 'openai', key_id = 'o1') => outcome({ at, model, served: null, failure: 'upstream', attempts: [{ provider, model, key_id, failure_class: 'transient' }] })
    for (let index = 0; index < 3; index++) tracker.request(failed(T0 + 1_000 + index, 'llama', 'groq', 'g1'))
    expect(held.noneLeftAt).toBeNull()
    // Failures minutes apart are stale evidence, no run.
    for (let index = 0; index < 3; index++) tracker.request(failed(T0 - 600_000 + index * 120_000, 'gpt-4o'))
    expect(held.noneLeftAt).toBeNull()
    for (let index = 0; index < 2; index++) tracker.request(failed(T0 + 2_000 + index, 'gpt-4o-mini'))
    expect(held.noneLeftAt).toBeNull()
    expect(tracker.request(failed(T0 + 3_000, 'gpt-4o-mini')).episodes).toContain(held)
    expect(held.noneLeftAt).toBe(T0 + 3_000)
    // Served on the model again: the run is over.
    expect(tracker.request(outcome({ at: T0 + 4_000, model: 'gpt-4o-mini', served: { provider: 'openai', model: 'gpt-4o-mini', key_id: 'o2' }, attempts: [{ provider: 'openai', model: 'gpt-4o-mini', key_id: 'o2', failure_class: null }] })).episodes).toContain(held)
    expect(held.noneLeftAt).toBeNull()
    // A failure a setting could have avoided (kept on a failing provider while another served the model) is no run.
    for (let index = 0; index < 5; index++) tracker.request({ ...failed(T0 + 5_000 + index, 'gpt-4o-mini'), namedProvider: 'openai', routing: { movedOff: false, addedFallbackServed: false, pinnedKeptFailed: true } })
    expect(held.noneLeftAt).toBeNull()
  })
})

describe('NodeTracker snapshots', () => {
  const states = (rows: { entity: string; state: string; held: boolean }[]) => Object.fromEntries(rows.map((row) => [row.entity, `${row.state}${row.held ? ' held' : ''}`]))

  it('records the worst state each route and direction was in since the last snapshot, not the state at the snapshot instant', () => {
    const tracker = new NodeTracker('n')
    const healthy = [route(), route({ keyId: 'o2', keyName: 'prod-2' })]
    tracker.routes(healthy, T0)
    // Both keys fail (the direction with them), then come back between two snapshots.
    tracker.routes([route({ state: 'failed' }), route({ keyId: 'o2', keyName: 'prod-2', state: 'failed' })], T0 + 5_000)
    const recovering = [route({ state: 'recovering' }), route({ keyId: 'o2', keyName: 'prod-2', state: 'recovering' })]
    tracker.routes(recovering, T0 + 10_000)
    expect(states(tracker.snapshot(recovering, T0 + 12_000))).toEqual({ 'route:openai:gpt-4o:o1': 'failed', 'route:openai:gpt-4o:o2': 'failed', 'direction:openai:gpt-4o': 'failed' })
    // The next snapshot starts from what it sees next.
    tracker.routes(healthy, T0 + 15_000)
    expect(states(tracker.snapshot(healthy, T0 + 72_000))).toEqual({ 'route:openai:gpt-4o:o1': 'healthy', 'route:openai:gpt-4o:o2': 'healthy', 'direction:openai:gpt-4o': 'healthy' })
  })

  it('reads a key held since the last snapshot as held, and a direction failed only when its keys failed at the same time', () => {
    const tracker = new NodeTracker('n')
    tracker.routes([route({ state: 'failed', held: true }), route({ keyId: 'o2', keyName: 'prod-2' })], T0)
    tracker.routes([route({ state: 'recovering' }), route({ keyId: 'o2', keyName: 'prod-2', state: 'failed' })], T0 + 5_000)
    const now = [route({ state: 'recovering' }), route({ keyId: 'o2', keyName: 'prod-2', state: 'recovering' })]
    expect(states(tracker.snapshot(now, T0 + 8_000))).toEqual({ 'route:openai:gpt-4o:o1': 'failed held', 'route:openai:gpt-4o:o2': 'failed', 'direction:openai:gpt-4o': 'degraded' })
  })
})
