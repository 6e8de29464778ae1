import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from './balancer.ts'
import { RECOMPUTE_INTERVAL_MS } from './tuning.ts'
import type { BalancerProvider, RouteRef } from './types.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [{ provider: 'openai', keys: ['k1', 'k2'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) }]
const route = (keyId: string): RouteRef => ({ provider: 'openai', model: MODEL, keyId })
const snapshot = (balancer: ReturnType<typeof createAdaptiveBalancer>, keyId: string) => balancer.routes().find((entry) => entry.keyId === keyId)!

// Two workers of one node: each sees its own attempts and observes the other's.
describe('attempts observed from another worker', () => {
  it('weigh the next recompute exactly as the worker that sent them does', () => {
    const sender = createAdaptiveBalancer({ providers, isHeld: () => false })
    const observer = createAdaptiveBalancer({ providers, isHeld: () => false })
    let now = 1_000_000
    for (let i = 0; i < 40; i++) {
      now += 100
      for (const keyId of ['k1', 'k2']) {
        const outcome = { ...route(keyId), failureClass: keyId === 'k2' && i % 2 === 0 ? ('transient' as const) : null, latencyMs: keyId === 'k1' ? 200 : 900, completionTokens: 20, now }
        sender.attemptStarted(route(keyId), now)
        sender.attemptFinished(outcome)
        observer.attemptObserved(outcome)
      }
    }
    now += RECOMPUTE_INTERVAL_MS
    sender.recompute(now)
    observer.recompute(now)
    for (const keyId of ['k1', 'k2']) {
      expect(snapshot(observer, keyId).errorRate).toBe(snapshot(sender, keyId).errorRate)
      expect(snapshot(observer, keyId).weight).toBe(snapshot(sender, keyId).weight)
      expect(snapshot(observer, keyId).state).toBe(snapshot(sender, keyId).state)
    }
    expect(snapshot(observer, 'k2').weight).toBeLessThan(snapshot(observer, 'k1').weight)
  })

  it('leave in-flight counts and trials to the worker that sent them', () => {
    const observer = createAdaptiveBalancer({ providers, isHeld: () => false })
    const now = 2_000_000
    for (let i = 0; i < 30; i++) observer.attemptObserved({ ...route('k1'), failureClass: 'transient', latencyMs: 50, now: now + i * 1_000 })
    expect(snapshot(observer, 'k1').state).toBe('failed')
    expect(observer.trials.entries()).toEqual([])
    // A served attempt sent after the failure recovers the route here too.
    observer.attemptObserved({ ...route('k1'), failureClass: null, latencyMs: 10, now: now + 40_000 })
    expect(snapshot(observer, 'k1').state).toBe('recovering')
  })
})
