/**
 * The request path's routing calls alone, in one process: plan, then one served attempt, N times
 * (what a healthy non-streamed request asks of routing). ns per request.
 *   node --import tsx bench/data-plane/router-micro.ts [--requests 300000]
 */
import pino from 'pino'
import { createAdaptiveBalancer, createHolds, createSessionAffinity, defaultLoadBalancerSettings, RateLimitBackoffs, RoutingLog } from '@switchboard/routing'
import { parseConfig } from '../../packages/gateway/src/config/load.ts'
import { createRegistry } from '../../packages/gateway/src/inference/registry.ts'
import { createMetrics } from '../../packages/gateway/src/observability/metrics.ts'
import { createDispatcher } from '../../packages/gateway/src/dispatch/dispatcher.ts'

const requests = Number(process.argv[process.argv.indexOf('--requests') + 1] || 300_000)
const config = parseConfig({ providers: { openai: { keys: [{ name: 'k', value: 'sk-bench-aaaa', models: ['*'], weight: 1 }], network_config: { base_url: 'http://127.0.0.1:9' } } } }, 'micro', {})
const registry = createRegistry(config.providers)
const holds = createHolds({ nodeId: 'bench', random: Math.random })
const balancer = createAdaptiveBalancer({ providers: registry.list.map((runtime) => ({ provider: runtime.name, keys: runtime.config.keys })), isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) })
const dispatcher = createDispatcher({ backoffs: new RateLimitBackoffs(), balancer, holds, sessions: createSessionAffinity({ capacity: 10, idleMs: 60_000 }), metrics: createMetrics(), logger: pino({ level: 'silent' }), registry: () => registry, settings: () => defaultLoadBalancerSettings, now: Date.now, random: Math.random })
const filter = { fit: () => "fits" as const }
function one(index: number) {
  const log = new RoutingLog(false)
  const dispatch = dispatcher.plan({ model: 'openai/gpt-4o-mini', fallbacks: [] }, { requestId: String(index), sessionId: null, directKey: null, log }, false, filter)
  const step = dispatch.next()
  if (step.kind !== 'attempt') throw new Error('no attempt')
  const started = Date.now()
  dispatch.report(step, { sent: true, startedAt: started, failure: null, served: true, rateLimit: null, usage: { promptTokens: 5, completionTokens: 7 } })
}
for (let round = 0; round < 5; round++) {
  const start = process.hrtime.bigint()
  for (let index = 0; index < requests; index++) one(index)
  const ns = Number(process.hrtime.bigint() - start) / requests
  console.log(`round ${round + 1}: ${ns.toFixed(0)} ns per request`)
  balancer.recompute(Date.now())
}
registry.close()
