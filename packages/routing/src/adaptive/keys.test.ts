import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from './balancer.ts'
import { directionLog, keyLog } from './routing-log.ts'
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

describe('selectKey', () => {
  it('draws by adaptive weight, which starts equal for new keys whatever their static weight', () => {
    const { balancer } = setup()
    expect(balancer.selectKey('openai', MODEL, () => 0.49)).toMatchObject({ keyId: 'k1', reason: 'adaptive', share: 0.5 })
    expect(balancer.selectKey('openai', MODEL, () => 0.51)).toMatchObject({ keyId: 'k2', reason: 'adaptive', share: 0.5 })
  })

  it('draws by static weight with key selection off, still skipping held keys', () => {
    const { balancer, held } = setup()
    const off = { routeSelectionEnabled: false }
    expect(balancer.selectKey('openai', MODEL, () => 0.7, off)).toMatchObject({ keyId: 'k1', reason: 'static', share: 0.75 })
    expect(balancer.selectKey('openai', MODEL, () => 0.8, off)).toMatchObject({ keyId: 'k2', reason: 'static', share: 0.25 })
    held.add('k1')
    balancer.holdsChanged()
    const decision = balancer.selectKey('openai', MODEL, () => 0.1, off)
    expect(decision).toMatchObject({ keyId: 'k2', skipped: [{ keyId: 'k1', keyName: 'prod-1', reason: 'held' }] })
  })

  it('skips a hold even when the caller forgot to announce it', () => {
    const { balancer, held } = setup()
    held.add('k1')
    for (let draw = 0; draw < 20; draw++) expect(balancer.selectKey('openai', MODEL, () => draw / 20).keyId).toBe('k2')
  })

  it('sends a failed key as the last resort, and none when every key is held', () => {
    const { balancer, held } = setup()
    balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'k1' }, 0)
    balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'k2' }, 0)
    expect(balancer.selectKey('openai', MODEL, () => 0.1)).toMatchObject({ keyId: 'k1', reason: 'last_resort_failed' })
    held.add('k1')
    held.add('k2')
    balancer.holdsChanged()
    expect(balancer.selectKey('openai', MODEL, () => 0.1)).toMatchObject({ keyId: null, reason: 'all_held' })
  })

  it('leaves out excluded keys, and says so when nothing is left', () => {
    const { balancer } = setup()
    const decision = balancer.selectKey('openai', MODEL, () => 0.01, { exclude: new Set(['k1']) })
    expect(decision).toMatchObject({ keyId: 'k2', share: 1, skipped: [{ keyId: 'k1', reason: 'excluded' }] })
    expect(balancer.selectKey('openai', MODEL, () => 0.01, { exclude: new Set(['k1', 'k2']) })).toMatchObject({ keyId: null, reason: 'all_excluded' })
  })

  it('keeps a session key while it is eligible, and never one that does not serve the model', () => {
    const { balancer, held } = setup()
    expect(balancer.selectKey('openai', MODEL, () => 0.01, { preferKeyId: 'k2' })).toMatchObject({ keyId: 'k2', reason: 'session' })
    expect(balancer.selectKey('openai', MODEL, () => 0.01, { preferKeyId: 'k3' })).toMatchObject({ keyId: 'k1', reason: 'adaptive' })
    held.add('k2')
    balancer.holdsChanged()
    expect(balancer.selectKey('openai', MODEL, () => 0.99, { preferKeyId: 'k2' })).toMatchObject({ keyId: 'k1', reason: 'adaptive' })
  })

  it('answers no_keys for a provider without a key for the model', () => {
    expect(setup().balancer.selectKey('anthropic', MODEL, () => 0.5)).toMatchObject({ keyId: null, reason: 'no_keys' })
  })
})

describe('keyWeights', () => {
  it('gives the rotation module adaptive or static weights in configured order, 0 for failed and held keys', () => {
    const { balancer, held } = setup()
    expect(balancer.keyWeights('openai', MODEL)).toEqual([{ keyId: 'k1', weight: 100 }, { keyId: 'k2', weight: 100 }])
    expect(balancer.keyWeights('openai', MODEL, false)).toEqual([{ keyId: 'k1', weight: 3 }, { keyId: 'k2', weight: 1 }])
    balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'k1' }, 0)
    held.add('k2')
    balancer.holdsChanged()
    expect(balancer.keyWeights('openai', MODEL)).toEqual([{ keyId: 'k1', weight: 0 }, { keyId: 'k2', weight: 0 }])
    expect(balancer.keyWeights('openai', MODEL, false)).toEqual([{ keyId: 'k1', weight: 3 }, { keyId: 'k2', weight: 0 }])
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
  it('records the chosen provider and key and the skipped ones, with their reasons', () => {
    const { balancer, held } = setup()
    held.add('k1')
    balancer.holdsChanged()
    const direction = balancer.selectDirection(MODEL, { settings: defaultLoadBalancerSettings })
    const key = balancer.selectKey('openai', MODEL, () => 0.5)
    expect([...directionLog(direction), ...keyLog(direction.primary!, key)]).toEqual([
      { kind: 'provider_chosen', provider: 'openai', model: MODEL, reason: 'scored', score: 100, pinned: null },
      { kind: 'key_chosen', provider: 'openai', model: MODEL, keyId: 'k2', keyName: 'prod-2', reason: 'adaptive', weight: 100, share: 1 },
      { kind: 'key_skipped', provider: 'openai', model: MODEL, keyId: 'k1', keyName: 'prod-1', reason: 'held' },
    ])
  })
})
