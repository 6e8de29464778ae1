import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from './balancer.ts'
import { drawShares, keyEngine } from '../../test/engine-fixture.ts'
import { keyChosenLine, RoutingLog } from '../planning/log.ts'
import { defaultLoadBalancerSettings, type BalancerProvider } from './types.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [
  {
    provider: 'openai',
    keys: [
      { id: 'k1', name: 'prod-1', models: [MODEL], weight: 3 },
      { id: 'k2', name: 'prod-2', models: ['*'], weight: 1 },
      { id: 'k3', name: 'mini-only', models: ['gpt-4o-mini'], weight: 1 },
    ],
  },
]

function setup() {
  const held = new Set<string>()
  const balancer = createAdaptiveBalancer({ providers, isHeld: (_, keyId) => held.has(keyId) })
  return { balancer, held }
}

/** Key choice as requests make it: planKeys + keyRotationFor(...).first(), on real holds. */
describe('the key engine (planKeys + keyRotationFor)', () => {
  it('draws by adaptive weight, which starts equal for new keys whatever their static weight', () => {
    const engine = keyEngine(providers)
    const first = engine.firstKey('openai', MODEL, () => 0.49)!
    expect(first).toMatchObject({ key: { id: 'k1' }, why: 'first' })
    expect(drawShares(first.plan)).toEqual([0.5, 0.5])
    expect(engine.firstKey('openai', MODEL, () => 0.51)!.key.id).toBe('k2')
  })

  it('draws by static weight with key selection off, still skipping held keys', () => {
    const engine = keyEngine(providers)
    const off = { routeSelectionEnabled: false }
    expect(engine.firstKey('openai', MODEL, () => 0.7, off)!.key.id).toBe('k1')
    expect(drawShares(engine.firstKey('openai', MODEL, () => 0.7, off)!.plan)).toEqual([0.75, 0.25])
    expect(engine.firstKey('openai', MODEL, () => 0.8, off)!.key.id).toBe('k2')
    engine.holdKey('openai', 'k1')
    const first = engine.firstKey('openai', MODEL, () => 0.1, off)!
    expect(first.key.id).toBe('k2')
    expect(first.plan.leftOut).toMatchObject([{ keyId: 'k1', keyName: 'prod-1', reason: 'held', dead: true }])
  })

  it('never draws a held key', () => {
    const engine = keyEngine(providers)
    engine.holdKey('openai', 'k1')
    for (let draw = 0; draw < 20; draw++) expect(engine.firstKey('openai', MODEL, () => draw / 20)!.key.id).toBe('k2')
  })

  it('sends a failed key as the last resort, and with every key held sends one anyway, as its check', () => {
    const engine = keyEngine(providers)
    engine.balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'k1' }, 0)
    engine.balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'k2' }, 0)
    // Both weights are 0: a uniform draw among them rather than refusing the request.
    expect(engine.firstKey('openai', MODEL, () => 0.1)!.key.id).toBe('k1')
    expect(engine.firstKey('openai', MODEL, () => 0.9)!.key.id).toBe('k2')
    engine.holdKey('openai', 'k1')
    engine.holdKey('openai', 'k2')
    const first = engine.firstKey('openai', MODEL, () => 0.1)!
    expect(first.plan.everyKeyHeld).toBe(true)
    expect(first.plan.check).toBe(first.plan.first)
  })

  it('keeps a session key while it is offered, never one that does not serve the model, and not once it is held', () => {
    const engine = keyEngine(providers)
    expect(engine.firstKey('openai', MODEL, () => 0.01, { sessionKeyId: 'k2' })!.key.id).toBe('k2')
    expect(engine.firstKey('openai', MODEL, () => 0.01, { sessionKeyId: 'k3' })!.key.id).toBe('k1')
    engine.holdKey('openai', 'k2')
    expect(engine.firstKey('openai', MODEL, () => 0.99, { sessionKeyId: 'k2' })!.key.id).toBe('k1')
  })

  it('has no key for a provider without a key for the model', () => {
    expect(keyEngine(providers).firstKey('anthropic', MODEL, () => 0.5)).toBeNull()
  })
})

describe('rotationWeights', () => {
  it('gives the rotation module adaptive or static weights in configured order, 0 for failed and held keys', () => {
    const { balancer, held } = setup()
    const keyWeights = (routeSelectionEnabled?: boolean) => {
      const { keyIds, weights } = balancer.rotationWeights('openai', MODEL, routeSelectionEnabled)!
      return keyIds.map((keyId, index) => ({ keyId, weight: weights[index] }))
    }
    expect(keyWeights()).toEqual([{ keyId: 'k1', weight: 100 }, { keyId: 'k2', weight: 100 }])
    expect(keyWeights(false)).toEqual([{ keyId: 'k1', weight: 3 }, { keyId: 'k2', weight: 1 }])
    balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'k1' }, 0)
    held.add('k2')
    balancer.holdsChanged()
    expect(keyWeights()).toEqual([{ keyId: 'k1', weight: 0 }, { keyId: 'k2', weight: 0 }])
    expect(keyWeights(false)).toEqual([{ keyId: 'k1', weight: 3 }, { keyId: 'k2', weight: 0 }])
  })
})

describe('setProviders', () => {
  it('drops the metrics of removed keys and starts new keys at full weight', () => {
    const { balancer } = setup()
    balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'k1' }, 0)
    balancer.setProviders([{ provider: 'openai', keys: [providers[0]!.keys[1]!, { id: 'k4', name: 'new', models: [MODEL], weight: 1 }] }])
    balancer.setProviders(providers)
    const routes = balancer.routes().filter((route) => route.model === MODEL)
    expect(routes.map((route) => [route.keyId, route.state, route.weight])).toEqual([
      ['k1', 'healthy', 100],
      ['k2', 'healthy', 100],
    ])
  })
})

describe('routing log', () => {
  it('records the chosen provider and the key actually tried, with its share among the keys not held', () => {
    const engine = keyEngine(providers)
    engine.holdKey('openai', 'k1')
    const direction = engine.balancer.selectDirection(MODEL, { settings: defaultLoadBalancerSettings })
    const log = new RoutingLog(true)
    log.addDecision(direction)
    expect(log.lines).toEqual(['[loadbalancing] Provider openai for gpt-4o: the best-scored provider for the model (score 100)'])
    const first = engine.firstKey('openai', MODEL, () => 0.5)!
    expect(first.key.id).toBe('k2')
    expect(keyChosenLine({ provider: 'openai', model: MODEL, key: first.key.name }, first.plan, 1, first.why, false)).toBe('Key prod-2 for openai/gpt-4o: drawn by weight (share 100%)')
  })
})
