import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from './balancer.ts'
import { errorPenaltyOf, latencyPenaltyOf, weightOf } from './scoring.ts'
import { normalisedLatency } from './metrics.ts'
import { FAIL_SUSTAINED_MS, RECOVERY_CLEAN_REQUESTS, WEIGHT_FLOOR, WEIGHT_MAX } from './tuning.ts'
import { TRIAL_FIRST_WAIT_MS } from '../trials/timing.ts'
import type { FailureClass } from '../failures/failure-class.ts'
import type { BalancerProvider, RouteRef } from './types.ts'
import { keyEngine, routeState } from '../../test/engine-fixture.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [
  { provider: 'openai', keys: ['k1', 'k2', 'k3'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) },
]
const route = (keyId: string): RouteRef => ({ provider: 'openai', model: MODEL, keyId })

function setup(held: Set<string> = new Set()) {
  const balancer = createAdaptiveBalancer({ providers, isHeld: (_, keyId) => held.has(keyId) })
  const feed = (keyId: string, now: number, failureClass: FailureClass | null, latencyMs = 500, completionTokens = 0) => {
    balancer.attemptStarted(route(keyId), now)
    balancer.attemptFinished({ ...route(keyId), failureClass, latencyMs, completionTokens, now })
  }
  const weight = (keyId: string) => balancer.routes().find((snapshot) => snapshot.keyId === keyId)!.weight
  const snapshot = (keyId: string) => balancer.routes().find((entry) => entry.keyId === keyId)!
  return { balancer, feed, weight, snapshot }
}

describe('score parts', () => {
  it('maps the error rate linearly to a full penalty at 25%', () => {
    expect(errorPenaltyOf(0)).toBe(0)
    expect(errorPenaltyOf(0.125)).toBe(0.5)
    expect(errorPenaltyOf(0.9)).toBe(1)
  })

  it('penalises latency in proportion to how many times slower, against peers and the own baseline', () => {
    expect(latencyPenaltyOf(null, 100, 100)).toBe(0)
    expect(latencyPenaltyOf(100, 100, 100)).toBe(0)
    expect(latencyPenaltyOf(50, 100, 100)).toBe(0)
    expect(latencyPenaltyOf(150, 100, null)).toBe(0.25)
    expect(latencyPenaltyOf(150, 100, 100)).toBe(0.5)
    expect(latencyPenaltyOf(1000, 100, 100)).toBe(1)
  })

  it('divides latency by the work of the request, so long answers are not a slow key', () => {
    expect(normalisedLatency(500)).toBe(500)
    expect(normalisedLatency(5500, 0, 1000)).toBe(500)
  })

  it('keeps every weight on the scale with its floor', () => {
    expect(weightOf(1)).toBe(WEIGHT_MAX)
    expect(weightOf(0)).toBe(WEIGHT_FLOOR)
    expect(weightOf(-3)).toBe(WEIGHT_FLOOR)
  })
})

describe('route states', () => {
  it('starts a new key healthy at full weight (optimistic cold start)', () => {
    const { snapshot } = setup()
    expect(snapshot('k1')).toMatchObject({ state: 'healthy', weight: WEIGHT_MAX })
  })

  it('never counts caller faults or cancels against a key', () => {
    const { balancer, feed, snapshot } = setup()
    for (let step = 0; step < 20; step++) feed('k1', step * 100, step % 2 === 0 ? 'caller_fault' : 'cancelled')
    balancer.recompute(5_000)
    expect(snapshot('k1')).toMatchObject({ state: 'healthy', errorRate: 0 })
    expect(snapshot('k1').parts.errorPenalty).toBe(0)
  })

  it('marks a route degraded at the first signs of trouble, and failed on sustained errors', () => {
    const { balancer, feed, snapshot, weight } = setup()
    for (let step = 0; step < 4; step++) feed('k1', 1_000, null)
    feed('k1', 1_000, 'transient')
    balancer.recompute(1_000)
    expect(snapshot('k1').state).toBe('degraded')
    expect(weight('k1')).toBeLessThan(WEIGHT_MAX)
    expect(weight('k1')).toBeGreaterThanOrEqual(WEIGHT_FLOOR)
    for (let step = 0; step < 5; step++) feed('k1', 2_000, 'timeout')
    balancer.recompute(5_000)
    expect(snapshot('k1')).toMatchObject({ state: 'failed', weight: 0 })
  })

  it('goes back from degraded to healthy once the errors have decayed', () => {
    const { balancer, feed, snapshot } = setup()
    for (let step = 0; step < 4; step++) feed('k1', 0, null)
    feed('k1', 0, 'transient')
    balancer.recompute(0)
    expect(snapshot('k1').state).toBe('degraded')
    for (let cycle = 1; cycle <= 12; cycle++) {
      for (let step = 0; step < 4; step++) feed('k1', cycle * 5_000, null)
      balancer.recompute(cycle * 5_000)
    }
    expect(snapshot('k1').state).toBe('healthy')
  })

  it('k. stays degraded while idle: it goes back to healthy only after serving live traffic cleanly', () => {
    const { balancer, feed, snapshot } = setup()
    for (let step = 0; step < 4; step++) feed('k1', 0, null)
    feed('k1', 0, 'transient')
    balancer.recompute(0)
    expect(snapshot('k1').state).toBe('degraded')
    // A minute with no traffic: the errors decay, but nothing shows the route serves again.
    for (let cycle = 1; cycle <= 12; cycle++) balancer.recompute(cycle * 5_000)
    expect(snapshot('k1').state).toBe('degraded')
    for (let step = 0; step < 5; step++) feed('k1', 65_000, null)
    balancer.recompute(65_000)
    expect(snapshot('k1').state).toBe('healthy')
  })

  it('fails a route at once when its key is refused, without waiting for a recompute', () => {
    const { balancer, feed } = setup()
    feed('k2', 0, 'credential')
    // The refusal alone does not: the hold it places fails the route (a stale refusal places none).
    expect(routeState(balancer, route('k2'))).toBe('healthy')
    balancer.failRoute(route('k2'), 0)
    expect(routeState(balancer, route('k2'))).toBe('failed')
    // And the engine requests use never draws it, whatever the draw.
    const engine = keyEngine(providers)
    engine.balancer.failRoute(route('k2'), 0)
    for (let draw = 0; draw < 100; draw++) expect(engine.firstKey('openai', MODEL, () => draw / 100)!.key.id).not.toBe('k2')
  })

  it('keeps a failed route out on no timer, moves it to recovering when its trial is served, and back to healthy only after clean live traffic', () => {
    const { balancer, feed, snapshot, weight } = setup()
    const BREAKER_MS = 30_000
    for (let now = 0; now <= 10 * BREAKER_MS; now += 5_000) {
      feed('k1', now, 'transient')
      balancer.recompute(now)
    }
    expect(snapshot('k1').state).toBe('failed')
    // Its trial: due TRIAL_FIRST_WAIT_MS after it failed (its failed trials above pushed it further out).
    let at = 10 * BREAKER_MS
    while (!balancer.takeTrial(route('k1'), at)) at += 1_000
    feed('k1', at, null)
    expect(snapshot('k1').state).toBe('recovering')
    const weights = [weight('k1')]
    let now = at
    for (let cycle = 1; cycle <= 4; cycle++) {
      now += 5_000
      for (let step = 0; step < 2; step++) feed('k1', now, null)
      balancer.recompute(now)
      weights.push(weight('k1'))
    }
    expect(snapshot('k1').state).toBe('healthy')
    // Only the load it carries alone (the utilisation term) keeps it from the very top.
    expect(weights.at(-1)).toBeGreaterThan(0.8 * WEIGHT_MAX)
    for (let index = 1; index < weights.length; index++) expect(weights[index]).toBeGreaterThanOrEqual(weights[index - 1]! - 1e-9)
    expect(weights[1]).toBeGreaterThan(weights[0]!)
  })

  it('does not promote a recovering route on a burst: time must pass too', () => {
    const { balancer, feed, snapshot } = setup()
    balancer.failRoute(route('k1'), 0)
    balancer.releaseRoute(route('k1'), 1)
    for (let step = 0; step < RECOVERY_CLEAN_REQUESTS * 3; step++) feed('k1', 2, null)
    balancer.recompute(5_000)
    expect(snapshot('k1').state).toBe('recovering')
    balancer.recompute(10_001)
    expect(snapshot('k1').state).toBe('healthy')
  })

  it('sends a recovering route that keeps failing back to failed at its second failure, not at the next recompute', () => {
    const { balancer, feed, snapshot } = setup()
    balancer.failRoute(route('k1'), 0)
    balancer.releaseRoute(route('k1'), 1)
    feed('k1', 2, 'transient')
    expect(snapshot('k1').state).toBe('recovering')
    feed('k1', 3, 'transient')
    expect(snapshot('k1').state).toBe('failed')
    // ... and its trials start: the first is due TRIAL_FIRST_WAIT_MS later.
    expect(balancer.trials.entry(route('k1'))).toMatchObject({ state: 'failing', rung: 0, dueAt: 3 + TRIAL_FIRST_WAIT_MS })
  })

  it('fails a route that stopped serving after a second of failures in a row, however much it served before, without waiting for the recompute', () => {
    const { balancer, feed, snapshot } = setup()
    // A busy, healthy route: 40 served this cycle.
    for (let step = 0; step < 40; step++) feed('k1', 100 + step * 10, null)
    let now = 1_000
    for (; now < 1_000 + FAIL_SUSTAINED_MS; now += 100) {
      feed('k1', now, 'transient')
      expect(snapshot('k1').state).toBe('healthy')
    }
    feed('k1', now, 'transient')
    expect(snapshot('k1').state).toBe('failed')
    expect(balancer.trials.entry(route('k1'))).toMatchObject({ state: 'failing', dueAt: now + TRIAL_FIRST_WAIT_MS })
    // Slowly, too: three failures in a row over a second and more.
    for (let at = 0; at <= 2_000; at += 1_000) feed('k2', at, 'transient')
    expect(snapshot('k2').state).toBe('failed')
    // A flaky route serves within the second: it never trips, however many of its attempts fail.
    for (let at = 0; at < 20_000; at += 100) feed('k3', at, at % 400 === 0 ? null : 'transient')
    expect(snapshot('k3').state).not.toBe('failed')
    // A caller's fault counts against nothing, so it fails nothing either.
    const fresh = setup()
    for (let at = 0; at <= 3_000; at += 100) fresh.feed('k1', at, 'caller_fault')
    expect(fresh.snapshot('k1').state).toBe('healthy')
  })

  it('never lets the breaker release a held key; a released hold goes to recovering', () => {
    const held = new Set(['k1'])
    const { balancer, snapshot } = setup(held)
    balancer.failRoute(route('k1'), 0)
    for (let now = 5_000; now <= 600_000; now += 5_000) balancer.recompute(now)
    expect(snapshot('k1')).toMatchObject({ state: 'failed', held: true, weight: 0 })
    held.delete('k1')
    balancer.holdsChanged()
    balancer.releaseRoute(route('k1'), 600_001)
    expect(snapshot('k1')).toMatchObject({ state: 'recovering', held: false })
    expect(snapshot('k1').weight).toBeGreaterThan(WEIGHT_FLOOR)
  })

  it('scores a slower key lower than its peers, allowing for the size of the answer', () => {
    const { balancer, feed, snapshot } = setup()
    for (let cycle = 0; cycle < 6; cycle++) {
      const now = cycle * 5_000
      for (let step = 0; step < 5; step++) {
        feed('k1', now, null, 500, 0)
        // k2 writes ten times longer answers at the same speed per token: not slower.
        feed('k2', now, null, 5_500, 1_000)
        feed('k3', now, null, 1_500, 0)
      }
      balancer.recompute(now)
    }
    expect(snapshot('k1').parts.latencyPenalty).toBe(0)
    expect(snapshot('k2').parts.latencyPenalty).toBe(0)
    expect(snapshot('k3').parts.latencyPenalty).toBeGreaterThan(0.5)
    expect(snapshot('k3').state).toBe('degraded')
    expect(snapshot('k3').weight).toBeLessThan(snapshot('k1').weight)
  })

  it('notices a key slowing down against its own baseline even when it has no faster peer', () => {
    const single: BalancerProvider[] = [{ provider: 'openai', keys: [{ id: 'k1', name: 'k1', models: [MODEL], weight: 1 }] }]
    const balancer = createAdaptiveBalancer({ providers: single, isHeld: () => false })
    const feed = (now: number, latencyMs: number) => {
      balancer.attemptStarted(route('k1'), now)
      balancer.attemptFinished({ ...route('k1'), failureClass: null, latencyMs, now })
    }
    let now = 0
    for (; now < 300_000; now += 5_000) {
      for (let step = 0; step < 5; step++) feed(now, 500)
      balancer.recompute(now)
    }
    expect(balancer.routes()[0]!.parts.latencyPenalty).toBe(0)
    for (const end = now + 30_000; now < end; now += 5_000) {
      for (let step = 0; step < 5; step++) feed(now, 1_500)
      balancer.recompute(now)
    }
    expect(balancer.routes()[0]!.parts.latencyPenalty).toBeGreaterThan(0.3)
  })
})
