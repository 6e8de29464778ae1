import { describe, expect, it } from 'vitest'
import { NodeTracker, type HoldView } from '../tracker/tracker.ts'
import type { Episode, RouteView } from '../tracker/types.ts'
import { groupIncidents, type NodeLiveness, type StoredEpisode } from './group.ts'
import { answerIssues, parseIssueFilters } from '../queries/issues.ts'
import { HistoryQueryError } from '../queries/params.ts'

const T0 = Date.parse('2026-12-01T12:00:00Z')
const hold = (overrides: Partial<HoldView> = {}): HoldView => ({ provider: 'openai', keyId: 'k2', model: null, state: 'held', reason: 'credential', message: 'Incorrect API key provided', since: T0, rung: 0, checks: 0, baseWaitMs: 30_000, releaseCause: null, ...overrides })
const route = (overrides: Partial<RouteView> = {}): RouteView => ({ provider: 'groq', model: 'gpt-4o-mini', keyId: 'g1', keyName: 'groq-1', state: 'healthy', held: false, weight: 100, errorRate: 0, latencyMs: 100, parts: { errorPenalty: 0, latencyPenalty: 0, utilisation: 1, recoveryProgress: 1 }, ...overrides })

/** Runs inputs through one tracker per node and keeps the latest copy of every episode, as Postgres would. */
function fleet(script: (trackers: Record<string, NodeTracker>, keep: (node: string, episodes: readonly Episode[]) => void) => void): StoredEpisode[] {
  const stored = new Map<string, StoredEpisode>()
  const trackers: Record<string, NodeTracker> = { a: new NodeTracker('a'), b: new NodeTracker('b'), c: new NodeTracker('c') }
  script(trackers, (node, episodes) => {
    for (const episode of episodes) stored.set(`${node}:${episode.id}`, { ...structuredClone(episode), nodeId: node, region: node === 'c' ? 'us' : 'eu' })
  })
  return [...stored.values()]
}

const alive = (now: number): Map<string, NodeLiveness> => new Map(['a', 'b', 'c'].map((node) => [node, { region: node === 'c' ? 'us' : 'eu', lastSeenAt: now, stoppedAt: null }]))

describe('incidents from episodes', () => {
  it('makes one incident of a hold every node holds, attention for a rejected key, resolved by the edit', () => {
    const episodes = fleet((trackers, keep) => {
      keep('a', trackers.a!.hold(hold(), 'local', T0).episodes)
      keep('b', trackers.b!.hold(hold(), 'peer', T0 + 40).episodes)
      keep('c', trackers.c!.hold(hold(), 'peer', T0 + 90).episodes)
      keep('a', trackers.a!.hold(hold({ checks: 1, rung: 1 }), 'local', T0 + 30_000).episodes)
    })
    let [only, ...rest] = groupIncidents(episodes, alive(T0 + 60_000), { now: T0 + 60_000, keyName: () => 'prod-key-2' })
    expect(rest).toEqual([])
    expect(only!.incident).toMatchObject({ scope: 'key', entity: 'key:openai:k2', status: 'attention', action: 'held', checks: 1, nodes: ['a', 'b', 'c'], regions: ['eu', 'us'], reasons: ['credential'] })
    expect(only!.incident.what_would_help).toMatch(/^Replace the key: openai rejects key prod-key-2/)
    const edited = fleet((trackers, keep) => {
      for (const node of ['a', 'b', 'c'] as const) {
        keep(node, trackers[node]!.hold(hold(), node === 'a' ? 'local' : 'peer', T0).episodes)
        keep(node, trackers[node]!.hold(hold({ state: 'released', releaseCause: 'key_edit' }), node === 'a' ? 'local' : 'peer', T0 + 120_000).episodes)
      }
    })
    ;[only, ...rest] = groupIncidents(edited, alive(T0 + 200_000), { now: T0 + 200_000 })
    expect(rest).toEqual([])
    expect(only!.incident).toMatchObject({ status: 'resolved', duration_seconds: 120 })
    expect(only!.incident.what_would_help).toBeUndefined()
  })

  it('folds a failing provider’s route episodes into its direction incident, mitigated while traffic moved', () => {
    const episodes = fleet((trackers, keep) => {
      keep('a', trackers.a!.routes([route({ state: 'failed' }), route({ keyId: 'g2', state: 'failed' }), route({ provider: 'openai', keyId: 'o1' })], T0).episodes)
      keep('b', trackers.b!.routes([route({ state: 'degraded' }), route({ keyId: 'g2' }), route({ provider: 'openai', keyId: 'o1' })], T0 + 5_000).episodes)
    })
    const grouped = groupIncidents(episodes, alive(T0 + 10_000), { now: T0 + 10_000 })
    expect(grouped).toHaveLength(1)
    expect(grouped[0]!.incident).toMatchObject({ scope: 'direction', entity: 'direction:groq:gpt-4o-mini', status: 'mitigated', action: 'moved_traffic', nodes: ['a', 'b'] })
  })

  it('says waiting when a recovery sees no traffic, and unobserved when every node that saw it went quiet', () => {
    const episodes = fleet((trackers, keep) => {
      keep('a', trackers.a!.routes([route({ state: 'failed' })], T0).episodes)
      keep('a', trackers.a!.routes([route({ state: 'recovering' })], T0 + 30_000).episodes)
      keep('c', trackers.c!.routes([route({ provider: 'cohere', model: 'command-r', keyId: 'c1', state: 'failed' })], T0).episodes)
    })
    const nodes = alive(T0 + 40_000)
    nodes.set('c', { region: 'us', lastSeenAt: T0 + 1_000, stoppedAt: null })
    const grouped = groupIncidents(episodes, nodes, { now: T0 + 40_000, waitingAfterMs: 5_000, lostAfterMs: 10_000 })
    const status = Object.fromEntries(grouped.map((item) => [item.incident.provider, item.incident.status]))
    expect(status).toEqual({ groq: 'waiting', cohere: 'unobserved' })
    expect(grouped.find((item) => item.incident.provider === 'cohere')!.incident.closed_at).toBe(new Date(T0 + 1_000).toISOString())
    // A request reaching the recovering route makes it recovering again.
    const fresh = groupIncidents(episodes.map((episode) => (episode.nodeId === 'a' ? { ...episode, lastRequestAt: T0 + 38_000 } : episode)), nodes, { now: T0 + 40_000, waitingAfterMs: 5_000, lostAfterMs: 10_000 })
    expect(fresh.find((item) => item.incident.provider === 'groq')!.incident.status).toBe('recovering')
  })

  it('pages, sorts, facets and refuses what the reference refuses', () => {
    const episodes = fleet((trackers, keep) => {
      for (let index = 0; index < 7; index++) keep('a', trackers.a!.hold(hold({ keyId: `k${index}`, reason: index % 2 === 0 ? 'credential' : 'rate_limit', model: index % 2 === 0 ? null : 'gpt-4o' }), 'local', T0 + index * 1000).episodes)
    })
    const grouped = groupIncidents(episodes, alive(T0 + 60_000), { now: T0 + 60_000 })
    const window = { from: T0 - 60_000, to: T0 + 60_000 }
    const ask = (query: string) => answerIssues(grouped, parseIssueFilters(new URLSearchParams(query)), window, (_provider, keyId) => `name-${keyId}`)
    expect(ask('').issues).toHaveLength(7)
    expect(ask('').total).toBeUndefined()
    const page = ask('limit=3&offset=3')
    expect(page).toMatchObject({ total: 7, offset: 3, limit: 3 })
    expect(page.issues).toHaveLength(3)
    expect(ask('limit=3&offset=50')).toMatchObject({ offset: 6 })
    expect(ask('limit=3&offset=50').issues).toHaveLength(1)
    expect(page.facets!.reasons).toEqual({ credential: 4, rate_limit: 3 })
    expect(page.facets!.scopes).toEqual({ key: 4, route: 3 })
    expect(ask('limit=10').issues.slice(0, 4).every((issue) => issue.status === 'attention')).toBe(true)
    expect(ask('limit=10&statuses=mitigated').total).toBe(3)
    expect(ask('search=name-k3').issues.map((issue) => issue.key_ids)).toEqual([['k3']])
    expect(ask('sort=oldest').issues[0]!.key_ids).toEqual(['k0'])
    expect(ask('limit=10').matched_summary).toMatchObject({ attention: 4, ongoing: 7, resolved: 0, median_resolve_seconds: null })
    for (const [query, param] of [['offset=-1', 'offset'], ['sort=loud', 'sort'], ['statuses=odd', 'statuses'], ['offset=x', 'offset']] as const) {
      expect(() => ask(query)).toThrow(HistoryQueryError)
      try {
        ask(query)
      } catch (error) {
        expect((error as HistoryQueryError).param).toBe(param)
      }
    }
    expect(ask('limit=0').limit).toBe(25)
    expect(ask('limit=500').limit).toBe(100)
  })

  it('follows the latest evidence: a rejected key a check proved valid, now rate limited, is no longer a key to replace (issue 36, item 5)', () => {
    const episodes = fleet((trackers, keep) => {
      keep('a', trackers.a!.hold(hold({ baseWaitMs: 10_000 }), 'local', T0).episodes)
      // The check answers 429: the key is valid; the whole-key hold is settled and the model is held for the rate limit.
      keep('a', trackers.a!.hold(hold({ state: 'released', releaseCause: 'settled', checks: 1 }), 'local', T0 + 11_000).episodes)
      keep('a', trackers.a!.hold(hold({ model: 'gpt-4o', reason: 'rate_limit', message: 'Rate limit reached for requests', since: T0 + 11_000 }), 'local', T0 + 11_000).episodes)
    })
    const [only, ...rest] = groupIncidents(episodes, alive(T0 + 20_000), { now: T0 + 20_000 })
    expect(rest).toEqual([])
    expect(only!.incident).toMatchObject({ entity: 'key:openai:k2', status: 'mitigated', reasons: ['rate_limit', 'credential'] })
    expect(only!.incident.what_would_help).toBeUndefined()
    // The same answer on the whole key (the hold replaced in place) reads the same.
    const inPlace = fleet((trackers, keep) => {
      keep('a', trackers.a!.hold(hold(), 'local', T0).episodes)
      keep('a', trackers.a!.hold(hold({ state: 'released', releaseCause: 'settled', checks: 1 }), 'local', T0 + 31_000).episodes)
      keep('a', trackers.a!.hold(hold({ reason: 'rate_limit', message: 'Rate limit reached for requests', since: T0 + 31_000 }), 'local', T0 + 31_000).episodes)
    })
    const [replaced] = groupIncidents(inPlace, alive(T0 + 40_000), { now: T0 + 40_000 })
    expect(replaced!.incident).toMatchObject({ status: 'mitigated', reasons: ['rate_limit', 'credential'] })
    // And a key rejected again after a rate limit is one to replace, quoting the rejection.
    const again = fleet((trackers, keep) => {
      keep('a', trackers.a!.hold(hold({ reason: 'rate_limit', message: 'Rate limit reached for requests' }), 'local', T0).episodes)
      keep('a', trackers.a!.hold(hold({ reason: 'credential', message: 'Incorrect API key provided', checks: 1, rung: 0 }), 'local', T0 + 31_000).episodes)
    })
    const [rejected] = groupIncidents(again, alive(T0 + 40_000), { now: T0 + 40_000, keyName: () => 'prod-key-2' })
    expect(rejected!.incident).toMatchObject({ status: 'attention', reasons: ['credential', 'rate_limit'] })
    expect(rejected!.incident.what_would_help).toMatch(/Replace the key.*said: "Incorrect API key provided"/)
  })

  it('makes one incident of a key slow on several models, the key\'s (issue 36, item 11)', () => {
    const slow = (model: string, state: RouteView['state']) => route({ provider: 'openai', model, keyId: 'o1', state })
    const fast = (model: string) => route({ provider: 'openai', model, keyId: 'o2' })
    const episodes = fleet((trackers, keep) => {
      keep('a', trackers.a!.routes([slow('gpt-4o', 'degraded'), fast('gpt-4o'), slow('gpt-4o-mini', 'healthy'), fast('gpt-4o-mini')], T0).episodes)
      keep('a', trackers.a!.routes([slow('gpt-4o', 'degraded'), fast('gpt-4o'), slow('gpt-4o-mini', 'degraded'), fast('gpt-4o-mini')], T0 + 5_000).episodes)
      keep('b', trackers.b!.routes([slow('gpt-4o-mini', 'degraded'), fast('gpt-4o-mini')], T0 + 7_000).episodes)
    })
    const grouped = groupIncidents(episodes, alive(T0 + 10_000), { now: T0 + 10_000 })
    expect(grouped.map((item) => item.incident.entity)).toEqual(['key:openai:o1'])
    expect(grouped[0]!.incident).toMatchObject({ scope: 'key', models: ['gpt-4o', 'gpt-4o-mini'], key_ids: ['o1'], nodes: ['a', 'b'], status: 'mitigated', action: 'reduced_traffic' })
    // A provider failing on a model stays that direction's incident: its keys' routes are part of it, not of a key problem.
    const direction = fleet((trackers, keep) => {
      keep('a', trackers.a!.routes([slow('gpt-4o', 'failed'), route({ provider: 'openai', model: 'gpt-4o', keyId: 'o2', state: 'failed' }), slow('gpt-4o-mini', 'degraded'), fast('gpt-4o-mini')], T0).episodes)
    })
    const split = groupIncidents(direction, alive(T0 + 10_000), { now: T0 + 10_000 })
    expect(split.map((item) => item.incident.entity).sort()).toEqual(['direction:openai:gpt-4o', 'route:openai:gpt-4o-mini:o1'])
  })

  it('makes one incident of a key rate limited on several models at once, the key\'s, mitigated (issue 36, item 11)', () => {
    const limited = (model: string) => hold({ keyId: 'o3', model, reason: 'rate_limit', message: 'Rate limit reached', baseWaitMs: 3_000 })
    const episodes = fleet((trackers, keep) => {
      keep('a', trackers.a!.hold(limited('gpt-4o'), 'local', T0).episodes)
      keep('b', trackers.b!.hold(limited('gpt-4o-mini'), 'local', T0 + 2_000).episodes)
    })
    const grouped = groupIncidents(episodes, alive(T0 + 5_000), { now: T0 + 5_000 })
    expect(grouped.map((item) => item.incident.entity)).toEqual(['key:openai:o3'])
    expect(grouped[0]!.incident).toMatchObject({ scope: 'key', models: ['gpt-4o', 'gpt-4o-mini'], reasons: ['rate_limit'], status: 'mitigated', action: 'held' })
    // Another reason on another model of the key is another problem.
    const two = fleet((trackers, keep) => {
      keep('a', trackers.a!.hold(limited('gpt-4o'), 'local', T0).episodes)
      keep('a', trackers.a!.hold(hold({ keyId: 'o3', model: 'gpt-4o-mini', reason: 'model_access', message: 'no access' }), 'local', T0 + 1_000).episodes)
    })
    expect(groupIncidents(two, alive(T0 + 5_000), { now: T0 + 5_000 }).map((item) => item.incident.entity).sort()).toEqual(['route:openai:gpt-4o-mini:o3', 'route:openai:gpt-4o:o3'])
  })

  it('stops advising re-routing once the pinned provider is recovering: the setting would avoid nothing now (issue 36, item 5)', () => {
    const pinnedFailed = (at: number) => ({ at, namedProvider: 'groq', model: 'gpt-4o-mini', attempts: [{ provider: 'groq', model: 'gpt-4o-mini', key_id: 'g1', failure_class: 'transient' as const }], served: null, failure: 'upstream' as const, routing: { movedOff: false, addedFallbackServed: false, pinnedKeptFailed: true } })
    const tracker = new NodeTracker('a')
    const stored = new Map<string, StoredEpisode>()
    const keep = (episodes: readonly Episode[]) => {
      for (const episode of episodes) stored.set(episode.id, { ...structuredClone(episode), nodeId: 'a', region: 'eu' })
    }
    keep(tracker.routes([route({ state: 'failed' }), route({ provider: 'openai', keyId: 'o1' })], T0).episodes)
    keep(tracker.request(pinnedFailed(T0 + 1_000)).episodes)
    const failing = groupIncidents([...stored.values()], alive(T0 + 2_000), { now: T0 + 2_000 })
    expect(failing[0]!.incident).toMatchObject({ entity: 'direction:groq:gpt-4o-mini', status: 'attention', pinned_kept_failed: 1 })
    expect(failing[0]!.incident.what_would_help).toMatch(/reroute_failed_directions/)
    keep(tracker.routes([route({ state: 'recovering' }), route({ provider: 'openai', keyId: 'o1' })], T0 + 5_000).episodes)
    const recovering = groupIncidents([...stored.values()], alive(T0 + 6_000), { now: T0 + 6_000 })
    expect(recovering[0]!.incident).toMatchObject({ status: 'recovering', pinned_kept_failed: 1 })
    expect(recovering[0]!.incident.what_would_help).toBeUndefined()
  })

  it('needs attention while a node\'s requests for the model fail in a row with nothing left, whatever the scope, until one is served (issue 36, item 1)', () => {
    const failed = (at: number, model = 'gpt-4o-mini', provider = 'groq') => ({ at, namedProvider: null, model, attempts: [{ provider, model, key_id: 'g1', failure_class: 'transient' as const }], served: null, failure: 'upstream' as const, routing: { movedOff: false, addedFallbackServed: false, pinnedKeptFailed: false } })
    const served = (at: number) => ({ ...failed(at), attempts: [{ provider: 'groq', model: 'gpt-4o-mini', key_id: 'g1', failure_class: null }], served: { provider: 'groq', model: 'gpt-4o-mini', key_id: 'g1' }, failure: null })
    const statusAt = (episodes: StoredEpisode[], now: number) => groupIncidents(episodes, alive(now), { now }).map((item) => [item.incident.entity, item.incident.status])
    const tracker = new NodeTracker('a')
    const stored = new Map<string, StoredEpisode>()
    const keep = (episodes: readonly Episode[]) => {
      for (const episode of episodes) stored.set(episode.id, { ...structuredClone(episode), nodeId: 'a', region: 'eu' })
    }
    // Another provider's only key is held for the model (rate limited); groq's key is failing, not yet failed.
    tracker.routes([route(), route({ provider: 'mistral', keyId: 'm1' })], T0)
    keep(tracker.hold(hold({ provider: 'mistral', keyId: 'm1', model: 'gpt-4o-mini', reason: 'rate_limit', message: 'Rate limit reached' }), 'local', T0 + 1_000).episodes)
    expect(statusAt([...stored.values()], T0 + 2_000)).toEqual([['route:mistral:gpt-4o-mini:m1', 'mitigated']])
    // Two failures are a blip; the third in a row is a run: the held key's incident needs attention too.
    keep(tracker.request(failed(T0 + 2_000)).episodes)
    keep(tracker.request(failed(T0 + 2_500)).episodes)
    expect(statusAt([...stored.values()], T0 + 2_600)).toEqual([['route:mistral:gpt-4o-mini:m1', 'mitigated']])
    keep(tracker.request(failed(T0 + 3_000)).episodes)
    expect(statusAt([...stored.values()], T0 + 3_100)).toEqual([['route:mistral:gpt-4o-mini:m1', 'attention']])
    // groq's route fails at the next recompute: its new episode knows the model is failing.
    keep(tracker.routes([route({ state: 'failed' }), route({ provider: 'mistral', keyId: 'm1', state: 'failed', held: true })], T0 + 5_000).episodes)
    const during = groupIncidents([...stored.values()], alive(T0 + 6_000), { now: T0 + 6_000 })
    expect(during.map((item) => item.incident.status)).toEqual(['attention', 'attention'])
    expect(during[0]!.incident.what_would_help).toMatch(/^Requests for gpt-4o-mini are failing with no healthy key or provider left/)
    // A route back on a trial is recovering: newer evidence than the run, until requests fail again after it.
    keep(tracker.routes([route({ state: 'recovering' }), route({ provider: 'mistral', keyId: 'm1', state: 'failed', held: true })], T0 + 10_000).episodes)
    expect(statusAt([...stored.values()], T0 + 10_100)).toContainEqual(['direction:groq:gpt-4o-mini', 'recovering'])
    keep(tracker.request(failed(T0 + 11_000)).episodes)
    expect(statusAt([...stored.values()], T0 + 11_100)).toContainEqual(['direction:groq:gpt-4o-mini', 'attention'])
    // One request served ends the run: routing has it in hand again.
    keep(tracker.request(served(T0 + 12_000)).episodes)
    expect(statusAt([...stored.values()], T0 + 12_100).map(([, status]) => status).sort()).toEqual(['mitigated', 'recovering'])
  })
})
