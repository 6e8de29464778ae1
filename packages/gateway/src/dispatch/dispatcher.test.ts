import pino from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { createAdaptiveBalancer, createHolds, createSessionAffinity, defaultLoadBalancerSettings, RateLimitBackoffs, RoutingLog } from '@switchboard/routing'
import { parseConfig } from '../config/load.ts'
import { createRegistry } from '../inference/registry.ts'
import { createMetrics } from '../observability/metrics.ts'
import { createDispatcher, type DispatchTarget } from './dispatcher.ts'

const config = parseConfig(
  {
    providers: {
      openai: {
        keys: [
          { name: 'long', value: 'sk-long-aaaa', models: ['*'], weight: 1 },
          { name: 'short', value: 'sk-short-bbbb', models: ['*'], weight: 1 },
        ],
        // never called: the router only reads the registry
        network_config: { base_url: 'http://127.0.0.1:9' },
      },
    },
  },
  'router.test',
  {},
)
const registry = createRegistry(config.providers)
afterAll(() => registry.close())

describe('the dispatcher', () => {
  it('hands the answer\'s token counts to the balancer: a long completion is not a slow key', () => {
    let clock = 1_000_000
    const holds = createHolds({ nodeId: 'test', random: () => 0.5 })
    const balancer = createAdaptiveBalancer({ providers: registry.list.map((runtime) => ({ provider: runtime.name, keys: runtime.config.keys })), isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) })
    const metrics = createMetrics()
    const router = createDispatcher({
      backoffs: new RateLimitBackoffs(),
      balancer,
      holds,
      sessions: createSessionAffinity({ capacity: 10, idleMs: 60_000 }),
      metrics,
      logger: pino({ level: 'silent' }),
      registry: () => registry,
      settings: () => defaultLoadBalancerSettings,
      now: () => clock,
      random: () => 0.5,
    })
    const provider = registry.get('openai')!
    const target: DispatchTarget = { provider, model: 'gpt-4o', planned: { provider: 'openai', model: 'gpt-4o', source: 'primary', direct: false, firstKeyId: undefined, firstIsCheck: false } }
    const [long, short] = provider.config.keys
    const log = new RoutingLog(false)
    // Both keys take 4 s per answer; one writes 4,000 tokens each time, the other 10.
    for (let round = 0; round < 40; round++) {
      for (const [key, completionTokens] of [[long!, 4_000], [short!, 10]] as const) {
        const started = clock
        router.attemptStarted(target, key)
        clock += 4_000
        router.attemptFinished(target, key, started, null, log, null, { promptTokens: 20, completionTokens })
      }
      clock += 100
    }
    balancer.recompute(clock)
    const routes = balancer.routes()
    const penalty = (name: string) => routes.find((route) => route.keyName === name)!.parts.latencyPenalty
    expect(penalty('long')).toBeLessThan(penalty('short'))
    const weights = balancer.keyWeights('openai', 'gpt-4o')
    expect(weights.find((entry) => entry.keyId === long!.id)!.weight).toBeGreaterThan(weights.find((entry) => entry.keyId === short!.id)!.weight)
  })
})
