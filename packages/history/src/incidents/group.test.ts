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
})
