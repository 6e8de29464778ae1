import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createAdaptiveBalancer, type AdaptiveBalancer } from './balancer.ts'
import { RECOMPUTE_INTERVAL_MS, WEIGHT_FLOOR, WEIGHT_MAX } from './tuning.ts'
import { TRIAL_FIRST_WAIT_MS } from '../trials/timing.ts'
import { FAILURE_CLASSES, type FailureClass } from '../failures/failure-class.ts'
import { defaultLoadBalancerSettings, type BalancerProvider, type RouteRef } from './types.ts'
import { drawShares, keyEngine } from '../../test/engine-fixture.ts'
import { keyRotationFor, planKeys } from '../planning/key-plan.ts'
import { RoutingLog } from '../planning/log.ts'

const MODELS = ['m1', 'm2', 'm3']

const keyArbitrary = fc.record({
  models: fc.oneof(fc.constant(['*']), fc.subarray(MODELS, { minLength: 1 })),
  weight: fc.nat(5),
})
const configArbitrary = fc
  .array(fc.array(keyArbitrary, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 })
  .map((providers): BalancerProvider[] =>
    providers.map((keys, providerIndex) => ({
      provider: `p${providerIndex}`,
      keys: keys.map((key, keyIndex) => ({ id: `p${providerIndex}k${keyIndex}`, name: `key ${keyIndex}`, ...key })),
    })),
  )

/** One observation: an attempt on some key of some provider for some model, `elapsed` ms after the last. */
const eventArbitrary = fc.record({
  provider: fc.nat(),
  key: fc.nat(),
  model: fc.constantFrom(...MODELS),
  failureClass: fc.option(fc.constantFrom<FailureClass>(...FAILURE_CLASSES), { freq: 2 }),
  latencyMs: fc.integer({ min: 1, max: 20_000 }),
  completionTokens: fc.nat(2_000),
  elapsed: fc.nat(4_000),
  recompute: fc.boolean(),
})

type Observation = typeof eventArbitrary extends fc.Arbitrary<infer Value> ? Value : never

/** Replays events on a balancer; returns the time reached. */
function replay(balancer: AdaptiveBalancer, providers: readonly BalancerProvider[], events: readonly Observation[]): number {
  let now = 0
  for (const event of events) {
    now += event.elapsed
    const entry = providers[event.provider % providers.length]!
    const key = entry.keys[event.key % entry.keys.length]!
    const route: RouteRef = { provider: entry.provider, model: event.model, keyId: key.id }
    balancer.attemptStarted(route, now)
    balancer.attemptFinished({ ...route, failureClass: event.failureClass, latencyMs: event.latencyMs, completionTokens: event.completionTokens, now })
    if (event.recompute) balancer.recompute(now)
  }
  balancer.recompute(now + RECOMPUTE_INTERVAL_MS)
  return now + RECOMPUTE_INTERVAL_MS
}

/** Evenly spread draws in [0, 1): the exact distribution of a pick, without sampling noise. */
const grid = (count: number) => Array.from({ length: count }, (_, index) => (index + 0.5) / count)

describe('adaptive balancer properties', () => {
  it('keeps every weight within [floor, max], and 0 exactly for failed or held routes', () => {
    fc.assert(
      fc.property(configArbitrary, fc.array(eventArbitrary, { maxLength: 80 }), fc.array(fc.nat(), { maxLength: 4 }), (providers, events, heldPicks) => {
        const allKeys = providers.flatMap((entry) => entry.keys.map((key) => key.id))
        const held = new Set(heldPicks.map((pick) => allKeys[pick % allKeys.length]!))
        const balancer = createAdaptiveBalancer({ providers, isHeld: (_, keyId) => held.has(keyId) })
        replay(balancer, providers, events)
        for (const route of balancer.routes()) {
          if (route.state === 'failed') expect(route.weight).toBe(0)
          else {
            expect(route.weight).toBeGreaterThanOrEqual(WEIGHT_FLOOR)
            expect(route.weight).toBeLessThanOrEqual(WEIGHT_MAX)
          }
        }
      }),
    )
  })

  it('gives every direction selection probabilities that sum to 1, and the key engine draws keys in exactly those shares', () => {
    fc.assert(
      fc.property(configArbitrary, fc.array(eventArbitrary, { maxLength: 60 }), fc.boolean(), (providers, events, adaptive) => {
        const engine = keyEngine(providers)
        replay(engine.balancer, providers, events)
        for (const entry of providers) {
          for (const model of MODELS) {
            const draws = grid(1_000)
            const counts = new Map<string, number>()
            let shares: number[] | null = null
            for (const draw of draws) {
              const first = engine.firstKey(entry.provider, model, () => draw, { routeSelectionEnabled: adaptive, now: 1e9 })
              if (first === null) continue
              counts.set(first.key.id, (counts.get(first.key.id) ?? 0) + 1)
              shares ??= drawShares(first.plan)
            }
            if (shares === null) continue
            expect(shares.reduce((sum, value) => sum + value, 0)).toBeCloseTo(1, 9)
            const keys = entry.keys.filter((key) => key.models.includes('*') || key.models.includes(model))
            keys.forEach((key, index) => expect(Math.abs((counts.get(key.id) ?? 0) / draws.length - shares![index]!)).toBeLessThanOrEqual(entry.keys.length / draws.length))
          }
        }
      }),
    )
  })

  it("cuts a failing route's share within one cycle", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }),
        fc.array(fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 6, maxLength: 6 }), { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 300, max: 3_000 }),
        fc.integer({ min: 3, max: 10 }),
        (keyCount, warmup, latencyMs, failures) => {
          const providers: BalancerProvider[] = [{ provider: 'p', keys: Array.from({ length: keyCount }, (_, index) => ({ id: `k${index}`, name: `k${index}`, models: ['m'], weight: 1 })) }]
          const balancer = createAdaptiveBalancer({ providers, isHeld: () => false })
          const serve = (keyId: string, now: number, failureClass: FailureClass | null) => {
            balancer.attemptStarted({ provider: 'p', model: 'm', keyId }, now)
            balancer.attemptFinished({ provider: 'p', model: 'm', keyId, failureClass, latencyMs, now })
          }
          let now = 0
          for (const cycle of warmup) {
            now += RECOMPUTE_INTERVAL_MS
            for (let index = 0; index < keyCount; index++) for (let step = 0; step < cycle[index]!; step++) serve(`k${index}`, now, null)
            balancer.recompute(now)
          }
          const shareOfFailing = () => balancer.routes().find((route) => route.keyId === 'k0')!.expectedShare
          const before = shareOfFailing()
          now += RECOMPUTE_INTERVAL_MS
          for (let step = 0; step < failures; step++) serve('k0', now, 'transient')
          for (let index = 1; index < keyCount; index++) serve(`k${index}`, now, null)
          balancer.recompute(now)
          expect(shareOfFailing()).toBeLessThan(before)
        },
      ),
    )
  })

  it('lets a recovered route climb back to a full share on clean live traffic', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 300, max: 3_000 }), fc.integer({ min: 10, max: 40 }), (keyCount, latencyMs, perCycle) => {
        const providers: BalancerProvider[] = [{ provider: 'p', keys: Array.from({ length: keyCount }, (_, index) => ({ id: `k${index}`, name: `k${index}`, models: ['m'], weight: 1 })) }]
        const engine = keyEngine(providers)
        const balancer = engine.balancer
        balancer.failRoute({ provider: 'p', model: 'm', keyId: 'k0' }, 0)
        const weightOfRecovering = () => balancer.routes().find((route) => route.keyId === 'k0')!.weight
        let previous = 0
        for (let now = RECOMPUTE_INTERVAL_MS; now <= TRIAL_FIRST_WAIT_MS + 30 * RECOMPUTE_INTERVAL_MS; now += RECOMPUTE_INTERVAL_MS) {
          for (const draw of grid(perCycle)) {
            const keyId = engine.firstKey('p', 'm', () => draw, { now })!.key.id
            balancer.attemptStarted({ provider: 'p', model: 'm', keyId }, now)
            balancer.attemptFinished({ provider: 'p', model: 'm', keyId, failureClass: null, latencyMs, now })
          }
          balancer.recompute(now)
          const weight = weightOfRecovering()
          if (now > TRIAL_FIRST_WAIT_MS) expect(weight).toBeGreaterThanOrEqual(previous - 15)
          previous = weight
        }
        const routes = balancer.routes()
        const recovered = routes.find((route) => route.keyId === 'k0')!
        expect(recovered.state).toBe('healthy')
        expect(recovered.expectedShare).toBeGreaterThanOrEqual(0.8 / keyCount)
      }),
    )
  })

  it('never selects a held key or a key that does not serve the model, and never a key killed for the request', () => {
    fc.assert(
      fc.property(
        configArbitrary,
        fc.array(eventArbitrary, { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.boolean(),
        (providers, events, heldPicks, laterHeldPicks, killedPicks, adaptive) => {
          const allKeys = providers.flatMap((entry) => entry.keys.map((key) => ({ provider: entry.provider, id: key.id })))
          const engine = keyEngine(providers)
          const held = new Set<string>()
          const hold = (pick: number) => {
            const key = allKeys[pick % allKeys.length]!
            held.add(key.id)
            engine.holdKey(key.provider, key.id)
          }
          heldPicks.forEach(hold)
          const balancer = engine.balancer
          replay(balancer, providers, events)
          for (const model of MODELS) balancer.selectDirection(model, { settings: defaultLoadBalancerSettings })
          // Holds placed after the tables were built (dispatch announces each: holdsChanged()).
          laterHeldPicks.forEach(hold)
          const killed = new Set(killedPicks.map((pick) => allKeys[pick % allKeys.length]!.id))
          for (const model of MODELS) {
            const direction = balancer.selectDirection(model, { settings: defaultLoadBalancerSettings, random: () => 0.5 })
            for (const target of direction.primary === null ? [] : [direction.primary, ...direction.fallbacks]) {
              const entry = providers.find((candidate) => candidate.provider === target.provider)!
              expect(entry.keys.some((key) => key.models.includes('*') || key.models.includes(model))).toBe(true)
            }
            for (const entry of providers) {
              const keys = entry.keys.filter((key) => key.models.includes('*') || key.models.includes(model))
              for (const draw of grid(50)) {
                const target = { provider: entry.provider, model, source: 'primary' as const, direct: false, firstKeyId: undefined, firstIsCheck: false }
                const settings = { ...defaultLoadBalancerSettings, route_selection_enabled: adaptive }
                const plan = planKeys(engine.planner, target, keys, { settings, now: 0, log: RoutingLog.off })
                const rotation = keyRotationFor(plan, { maxRetries: 3, backoffInitialMs: 1, backoffMaxMs: 1 }, () => draw)
                let step = rotation.first()
                const tried: string[] = []
                // Keys of `killed` refuse their credential: the rotation moves on and never comes back to them.
                while (step.kind === 'attempt' && tried.length < 20) {
                  const key = keys[step.keyIndex]!
                  tried.push(key.id)
                  expect(key.models.includes('*') || key.models.includes(model)).toBe(true)
                  // A held key is sent only as the one attempt of "every key is held".
                  if (held.has(key.id)) expect(plan.everyKeyHeld && step.keyIndex === plan.first).toBe(true)
                  step = rotation.next(killed.has(key.id) ? { failureClass: 'credential', waitHintMs: null } : { failureClass: 'transient', waitHintMs: null })
                }
                for (const id of killed) expect(tried.filter((keyId) => keyId === id).length).toBeLessThanOrEqual(1)
              }
            }
          }
        },
      ),
    )
  })
})
