/**
 * Recovery gets traffic (issue 36, item 8), on a fake clock through the router as the gateway
 * drives it: a provider back from an outage gets a real, growing share at once instead of the 2 %
 * floor, and a recovering key is sent a request within seconds even when every request belongs
 * to a session kept on another key (the session's request is lent for one attempt, and the
 * session stays on its key). Spec: reference/adaptive-load-balancing.txt ("a recovered route
 * returns to full traffic within seconds"), adaptive-routing-overview.txt ("come back gradually").
 */
import { describe, expect, it } from 'vitest'
import { routeState } from '../../test/engine-fixture.ts'
import { createAdaptiveBalancer } from '../adaptive/balancer.ts'
import { createSessionAffinity } from '../adaptive/session.ts'
import { RECOMPUTE_INTERVAL_MS } from '../adaptive/tuning.ts'
import { defaultLoadBalancerSettings, keyServesModel, type BalancerKey, type BalancerProvider } from '../adaptive/types.ts'
import type { AttemptFailure } from '../failures/failure-class.ts'
import { createHolds } from '../holds/holds.ts'
import { RateLimitBackoffs } from './backoffs.ts'
import { RoutingLog } from './log.ts'
import type { RouteTarget } from './request-route.ts'
import { createRouter } from './router.ts'
import type { PlannedTarget } from './types.ts'

const MODEL = 'claude'
const POLICY = { maxRetries: 1, backoffInitialMs: 10, backoffMaxMs: 20 }

/** A small seeded generator (xorshift32), so every run draws the same. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1
  return () => {
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    return state / 4_294_967_296
  }
}

const TRANSIENT: AttemptFailure = { failureClass: 'transient', scope: 'model', status: 503, waitHintMs: null, message: 'unavailable', code: null }
const REVOKED: AttemptFailure = { failureClass: 'credential', scope: 'key', status: 401, waitHintMs: null, message: 'invalid key', code: null }

/** A node's router over `providers` on a fake clock, and one request run to its end against `upstream`. */
function node(providers: BalancerProvider[]) {
  let clock = 0
  const random = seeded(11)
  const holds = createHolds({ nodeId: 'test', random: () => 0.5 })
  const backoffs = new RateLimitBackoffs()
  const balancer = createAdaptiveBalancer({ providers, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) || backoffs.isBackedOff(provider, keyId, model, clock) })
  const sessions = createSessionAffinity({ capacity: 100, idleMs: 3_600_000 })
  const keysFor = (provider: string, model: string): readonly BalancerKey[] | undefined => providers.find((entry) => entry.provider === provider)?.keys.filter((key) => keyServesModel(key, model))
  const router = createRouter({ balancer, holds, sessions, backoffs, keysFor, settings: () => defaultLoadBalancerSettings, now: () => clock, random, keyName: (_, keyId) => keyId })
  let nextRecompute = RECOMPUTE_INTERVAL_MS
  /** Moves the clock to `at`, running the 5 s cycles on the way. */
  const advance = (at: number) => {
    while (nextRecompute <= at) {
      clock = nextRecompute
      router.recompute()
      nextRecompute += RECOMPUTE_INTERVAL_MS
    }
    clock = at
  }
  /** Runs one request; returns the keys its attempts used (`provider/key`) and what served it. */
  const request = (upstream: (provider: string, keyId: string) => AttemptFailure | null, sessionId: string | null = null) => {
    const log = new RoutingLog(true)
    const plan = router.plan({ model: MODEL, pinnedProvider: undefined, fallbacks: [], sessionId, directKey: false, log })!
    const targets = plan.targets.map((planned: PlannedTarget): RouteTarget => ({ planned, keys: () => keysFor(planned.provider, planned.model) ?? [], policy: POLICY, deadlines: { requestMs: 30_000 }, continues: false }))
    const route = router.route<RouteTarget, BalancerKey>(plan, targets, { sessionId, log, streams: false, filter: { fit: () => 'fits' } })
    const attempts: string[] = []
    let servedBy: string | null = null
    for (let step = route.next(); step.kind === 'attempt'; step = route.next()) {
      const where = `${step.target.planned.provider}/${step.key.id}`
      attempts.push(where)
      const failure = upstream(step.target.planned.provider, step.key.id)
      route.report(step, { sent: true, startedAt: clock, failure, served: failure === null })
      if (failure === null) {
        // Served: the gateway answers the caller and asks for nothing more.
        servedBy = where
        break
      }
    }
    return { attempts, servedBy, primary: plan.targets[plan.primary]!.provider, log }
  }
  return { router, holds, balancer, sessions, request, advance, now: () => clock }
}

describe('a provider back from an outage', () => {
  it('gets about a quarter of its share from the first request it serves, and its full share within seconds, gradually', () => {
    const providers: BalancerProvider[] = [
      { provider: 'anthropic', keys: ['n1', 'n2'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) },
      { provider: 'bedrock', keys: ['b1', 'b2'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) },
    ]
    const { request, advance, balancer } = node(providers)
    const DOWN_FROM = 20_000
    const DOWN_UNTIL = 50_000
    const picks: { at: number; primary: string }[] = []
    let back: number | null = null
    // Ten requests a second, naming no provider; bedrock answers 503 while it is down.
    for (let at = 0; at < 120_000; at += 100) {
      advance(at)
      const down = at >= DOWN_FROM && at < DOWN_UNTIL
      const result = request((provider) => (provider === 'bedrock' && down ? TRANSIENT : null))
      picks.push({ at, primary: result.primary })
      if (back === null && at >= DOWN_UNTIL && result.servedBy?.startsWith('bedrock/')) back = at
    }
    expect(back).not.toBeNull()
    const share = (from: number, until: number) => {
      const window = picks.filter((pick) => pick.at >= from && pick.at < until)
      return window.filter((pick) => pick.primary === 'bedrock').length / window.length
    }
    // While it is down it is left out (a trial aside).
    expect(share(DOWN_FROM + 5_000, DOWN_UNTIL)).toBeLessThan(0.05)
    // The first 5 s after its trial served: a real share (the 2 % floor before this), below an even split.
    const first = share(back!, back! + 5_000)
    expect(first).toBeGreaterThan(0.1)
    expect(first).toBeLessThan(0.4)
    // Gradual: more once its ramp has come along, and every route of it healthy 20 s after it came back.
    expect(share(back! + 15_000, back! + 35_000)).toBeGreaterThan(first)
    advance(back! + 20_000)
    expect(balancer.routes().filter((route) => route.provider === 'bedrock').map((route) => route.state)).toEqual(['healthy', 'healthy'])
  })
})

describe('a recovering key under session traffic only', () => {
  const providers: BalancerProvider[] = [{ provider: 'anthropic', keys: ['k1', 'k2'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) }]
  const SESSIONS = ['s1', 's2', 's3', 's4', 's5']

  /** k2 refused and held, every session on k1, then k2 released by an operator. */
  function releasedWhileSessionsOnK1(k2Answer: () => AttemptFailure | null) {
    const world = node(providers)
    const { request, advance, holds, router, sessions, now } = world
    let k2Refuses = true
    const upstream = (_: string, keyId: string) => (keyId === 'k2' ? (k2Refuses ? REVOKED : k2Answer()) : null)
    for (let index = 0; index < 20 && !holds.isHeld('anthropic', 'k2', MODEL); index++) request(upstream)
    expect(holds.isHeld('anthropic', 'k2', MODEL)).toBe(true)
    for (const session of SESSIONS) expect(request(upstream, session).servedBy).toBe('anthropic/k1')
    advance(now() + 1_000)
    k2Refuses = false
    router.released(holds.clear({ provider: 'anthropic', keyId: 'k2' }, now()).changed)
    expect(routeState(world.balancer, { provider: 'anthropic', model: MODEL, keyId: 'k2' })).toBe('recovering')
    /** Two session requests a second for `ms`; the attempts they made. */
    const sessionTraffic = (ms: number) => {
      const attempts: string[] = []
      const until = now() + ms
      for (let turn = 0; now() < until; turn++) {
        advance(now() + 500)
        attempts.push(...request(upstream, SESSIONS[turn % SESSIONS.length]!).attempts)
      }
      return attempts
    }
    return { ...world, sessionTraffic, recalled: () => SESSIONS.map((session) => sessions.recall(session, MODEL, now())?.keyId) }
  }

  it('a released key that is still refused gets a request within seconds, is held again, and no session moves', () => {
    const { sessionTraffic, holds, recalled } = releasedWhileSessionsOnK1(() => REVOKED)
    const attempts = sessionTraffic(5_000)
    expect(attempts.filter((attempt) => attempt === 'anthropic/k2')).toHaveLength(1)
    expect(holds.conditions()).toMatchObject([{ key_id: 'k2', reason: 'credential', rung: 0 }])
    expect(recalled()).toEqual(SESSIONS.map(() => 'k1'))
  })

  it('a released key that serves again earns its way back to healthy within seconds, a request every 2 s, and no session moves', () => {
    const { sessionTraffic, balancer, recalled } = releasedWhileSessionsOnK1(() => null)
    const attempts = sessionTraffic(30_000)
    const onK2 = attempts.filter((attempt) => attempt === 'anthropic/k2').length
    // Gradual: one lent request per RECOVERY_PROBE_IDLE_MS at most, not the sessions' traffic.
    expect(onK2).toBeGreaterThanOrEqual(5)
    expect(onK2).toBeLessThanOrEqual(16)
    expect(routeState(balancer, { provider: 'anthropic', model: MODEL, keyId: 'k2' })).toBe('healthy')
    expect(recalled()).toEqual(SESSIONS.map(() => 'k1'))
  })
})

describe('a due check of a provider held on every key', () => {
  it("takes a session's request, and the session stays on the provider and key that served it before", () => {
    const providers: BalancerProvider[] = [
      { provider: 'anthropic', keys: [{ id: 'n1', name: 'n1', models: [MODEL], weight: 1 }] },
      { provider: 'bedrock', keys: [{ id: 'b1', name: 'b1', models: [MODEL], weight: 1 }] },
    ]
    const { request, advance, holds, sessions, now } = node(providers)
    let bedrockLimited = true
    const upstream = (provider: string) => (provider === 'bedrock' && bedrockLimited ? { ...TRANSIENT, failureClass: 'rate_limit' as const, status: 429 } : null)
    for (let index = 0; index < 40 && !holds.isHeld('bedrock', 'b1', MODEL); index++) request(upstream)
    expect(holds.isHeld('bedrock', 'b1', MODEL)).toBe(true)
    expect(request(upstream, 'session-1').servedBy).toBe('anthropic/n1')
    bedrockLimited = false
    const due = holds.holdsOn('bedrock', 'b1', MODEL)[0]!.dueAt
    advance(due)
    // The session's request is bedrock's check (a provider held on every key is checked first), and is served there.
    const checked = request(upstream, 'session-1')
    expect(checked.attempts).toEqual(['bedrock/b1'])
    expect(holds.isHeld('bedrock', 'b1', MODEL)).toBe(false)
    expect(sessions.recall('session-1', MODEL, now())).toMatchObject({ provider: 'anthropic', keyId: 'n1' })
    expect(request(upstream, 'session-1').servedBy).toBe('anthropic/n1')
  })
})

describe('a recovering key due a request and a held key due its check', () => {
  it('the check goes first; the next request is the recovering key\'s', () => {
    const providers: BalancerProvider[] = [{ provider: 'anthropic', keys: ['k1', 'k2', 'k3'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) }]
    const { request, advance, holds, router, now } = node(providers)
    const refusing = new Set(['k2', 'k3'])
    const upstream = (_: string, keyId: string) => (refusing.has(keyId) ? REVOKED : null)
    for (let index = 0; index < 40 && !(holds.isHeld('anthropic', 'k2', MODEL) && holds.isHeld('anthropic', 'k3', MODEL)); index++) request(upstream)
    refusing.clear()
    const due = holds.holdsOn('anthropic', 'k2', MODEL)[0]!.dueAt
    advance(due - 1)
    router.released(holds.clear({ provider: 'anthropic', keyId: 'k3' }, now()).changed)
    advance(due)
    expect(request(upstream).attempts).toEqual(['anthropic/k2'])
    expect(request(upstream).attempts).toEqual(['anthropic/k3'])
  })
})

describe('a session request lent to a recovering key that is still refused', () => {
  it("goes back to the session's own key next, whichever of the provider's keys that is", () => {
    const providers: BalancerProvider[] = [{ provider: 'anthropic', keys: ['k1', 'k2', 'k3', 'k4', 'k5'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) }]
    const { request, advance, holds, router, sessions, now } = node(providers)
    const upstream = (_: string, keyId: string) => (keyId === 'k5' ? REVOKED : null)
    for (let index = 0; index < 60 && !holds.isHeld('anthropic', 'k5', MODEL); index++) request(upstream)
    expect(holds.isHeld('anthropic', 'k5', MODEL)).toBe(true)
    for (let round = 0; round < 4; round++) {
      sessions.remember('session-1', MODEL, { provider: 'anthropic', keyId: 'k1' }, now())
      advance(now() + 3_000)
      // Released (still refused): the session's next request is lent to it, refused, then served by the session's key.
      router.released(holds.clear({ provider: 'anthropic', keyId: 'k5' }, now()).changed)
      expect(request(upstream, 'session-1').attempts).toEqual(['anthropic/k5', 'anthropic/k1'])
      expect(sessions.recall('session-1', MODEL, now())).toMatchObject({ keyId: 'k1' })
    }
  })
})
