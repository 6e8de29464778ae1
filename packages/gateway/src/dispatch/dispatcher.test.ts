import pino from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { createAdaptiveBalancer, createHolds, createSessionAffinity, defaultLoadBalancerSettings, RateLimitBackoffs, RoutingLog } from '@switchboard/routing'
import { parseConfig } from '../config/load.ts'
import { createRegistry } from '../inference/registry.ts'
import { createMetrics } from '../observability/metrics.ts'
import { createDispatcher } from './dispatcher.ts'

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
  it('hands the answer\'s token counts to the balancer: a long completion is not a slow key', async () => {
    let clock = 1_000_000
    const holds = createHolds({ nodeId: 'test', random: () => 0.5 })
    const balancer = createAdaptiveBalancer({ providers: registry.list.map((runtime) => ({ provider: runtime.name, keys: runtime.config.keys })), isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) })
    const metrics = createMetrics()
    let draws = 0
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
      random: () => (draws++ % 2 === 0 ? 0.25 : 0.75),
    })
    const provider = registry.get('openai')!
    const [long, short] = provider.config.keys
    const written = new Map([[long!.id, 4_000], [short!.id, 10]])
    const sent = new Map<string, number>()
    // Both keys take 4 s per answer; one writes 4,000 tokens each time, the other 10. Each request
    // is planned, sent on the key routing picks, and reported as a real one would be.
    for (let round = 0; round < 80; round++) {
      const dispatch = router.plan({ model: 'openai/gpt-4o', fallbacks: [] }, { requestId: `r${round}`, sessionId: null, directKey: null, log: new RoutingLog(false) }, false, { fit: () => 'fits' })
      const step = dispatch.next()
      if (step.kind !== 'attempt') throw new Error(`no attempt: ${step.outcome}`)
      const started = clock
      clock += 4_000
      dispatch.report(step, { sent: true, startedAt: started, failure: null, served: true, rateLimit: null, usage: { promptTokens: 20, completionTokens: written.get(step.key.id)! } })
      sent.set(step.key.id, (sent.get(step.key.id) ?? 0) + 1)
      clock += 100
    }
    expect(sent.get(long!.id)).toBeGreaterThan(10)
    expect(sent.get(short!.id)).toBeGreaterThan(10)
    expect(await metrics.registry.metrics()).toMatch(/switchboard_upstream_attempts_total\{provider="openai",failure_class="none"\} 80/)
    balancer.recompute(clock)
    const routes = balancer.routes()
    const penalty = (name: string) => routes.find((route) => route.keyName === name)!.parts.latencyPenalty
    expect(penalty('long')).toBeLessThan(penalty('short'))
    const { keyIds, weights } = balancer.rotationWeights('openai', 'gpt-4o')!
    expect(weights[keyIds.indexOf(long!.id)]).toBeGreaterThan(weights[keyIds.indexOf(short!.id)]!)
  })
})
