/**
 * A hold's trace origin (issue 40): plain data routing carries from the answer that placed the
 * hold to the entry, through renewals and snapshots, and out to the plans of requests that skip
 * the key. Never part of the entry's identity.
 */
import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from '../adaptive/balancer.ts'
import { createSessionAffinity } from '../adaptive/session.ts'
import { defaultLoadBalancerSettings, type BalancerProvider } from '../adaptive/types.ts'
import type { AttemptFailure } from '../failures/failure-class.ts'
import { RateLimitBackoffs } from '../planning/backoffs.ts'
import { planKeys } from '../planning/key-plan.ts'
import { RoutingLog } from '../planning/log.ts'
import { planRequest } from '../planning/request-plan.ts'
import { canonicalEntry, type TraceOrigin } from './entry.ts'
import { createHolds } from './holds.ts'
import { parseHoldEntry } from './snapshot.ts'

const ORIGIN: TraceOrigin = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' }
const MODEL = 'gpt-4o'
const refused: AttemptFailure = { failureClass: 'credential', scope: 'key', status: 401, waitHintMs: null, message: 'bad key', code: null }

describe('a hold\'s trace origin', () => {
  it('is put on the hold the answer places, and kept when a check renews it', () => {
    const holds = createHolds({ nodeId: 'a', random: () => 0.5 })
    const placed = holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: MODEL, startedAt: 900, now: 1_000, failure: refused, check: false, origin: ORIGIN })
    expect(placed.changed[0]!.origin).toEqual(ORIGIN)
    const due = holds.holdsOn('openai', 'k1', MODEL)[0]!.dueAt
    const renewed = holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: MODEL, startedAt: due, now: due + 1, failure: refused, check: true, origin: { traceId: 'f'.repeat(32), spanId: 'e'.repeat(16) } })
    expect(renewed.changed[0]!.rung).toBe(1)
    expect(renewed.changed[0]!.origin).toEqual(ORIGIN)
  })

  it('is absent when the answer brought none (tracing off)', () => {
    const holds = createHolds({ nodeId: 'a', random: () => 0.5 })
    const placed = holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: MODEL, startedAt: 900, now: 1_000, failure: refused, check: false })
    expect('origin' in placed.changed[0]!).toBe(false)
  })

  it('is not part of the entry\'s identity: a copy without it digests and ties the same', () => {
    const holds = createHolds({ nodeId: 'a', random: () => 0.5 })
    const entry = holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: MODEL, startedAt: 900, now: 1_000, failure: refused, check: false, origin: ORIGIN }).changed[0]!
    const { origin: _dropped, ...without } = entry
    expect(canonicalEntry(without)).toBe(canonicalEntry(entry))
  })

  it('survives a snapshot or a peer\'s JSON; a malformed one is dropped, never the hold', () => {
    const holds = createHolds({ nodeId: 'a', random: () => 0.5 })
    const entry = holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: MODEL, startedAt: 900, now: 1_000, failure: refused, check: false, origin: ORIGIN }).changed[0]!
    expect(parseHoldEntry(JSON.parse(JSON.stringify(entry)))!.origin).toEqual(ORIGIN)
    for (const origin of [{ traceId: 'XYZ', spanId: ORIGIN.spanId }, { traceId: '0'.repeat(32), spanId: ORIGIN.spanId }, { traceId: ORIGIN.traceId }, 'text', { traceId: ORIGIN.traceId, spanId: ORIGIN.spanId + '00' }]) {
      const parsed = parseHoldEntry({ ...JSON.parse(JSON.stringify(entry)), origin })
      expect(parsed).not.toBeNull()
      expect(parsed!.origin).toBeUndefined()
    }
  })

  it('reaches the key plan of a request that skips the held key', () => {
    const providers: BalancerProvider[] = [{ provider: 'openai', keys: [{ id: 'o1', name: 'prod-1', models: [MODEL], weight: 1 }, { id: 'o2', name: 'prod-2', models: [MODEL], weight: 1 }] }]
    const holds = createHolds({ nodeId: 'b', random: () => 0.5 })
    const balancer = createAdaptiveBalancer({ providers, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) })
    const components = { balancer, holds, sessions: createSessionAffinity({ capacity: 10, idleMs: 60_000 }), backoffs: new RateLimitBackoffs(), keysFor: () => providers[0]!.keys }
    // The hold came from a peer: merged as gossip brings it.
    const peer = createHolds({ nodeId: 'a', random: () => 0.5 })
    holds.merge(peer.recordAnswer({ provider: 'openai', keyId: 'o1', model: MODEL, startedAt: 900, now: 1_000, failure: refused, check: false, origin: ORIGIN }).changed, 1_000)
    balancer.holdsChanged()
    const plan = planRequest(components, { model: MODEL, pinnedProvider: 'openai', fallbacks: [], sessionId: null, directKey: false, settings: defaultLoadBalancerSettings, now: 2_000, random: () => 0.5, log: RoutingLog.off })!
    const keys = planKeys(components, plan.targets[0]!, providers[0]!.keys, { settings: defaultLoadBalancerSettings, now: 2_000, log: RoutingLog.off })
    expect(keys.leftOut).toMatchObject([{ keyId: 'o1', reason: 'held', origins: [ORIGIN] }])
  })
})
