/**
 * Micro-benchmark of the hot path of adaptive load balancing: the functions requests run to pick a
 * provider and a key (`planRequest`, `planKeys`, the key rotation's first draw), with 20 providers x
 * 50 keys all serving one model (design.md budget: median <= 1 us, p99 <= 5 us per request).
 *
 * Run from the repository root:  node --import tsx bench/data-plane/selection.ts
 *
 * Each case runs batches of BATCH requests timed with process.hrtime.bigint; the figures are the
 * median and p99 of the per-batch averages (per request), after a warm-up.
 */
import {
  createAdaptiveBalancer,
  createHolds,
  KeyRotation,
  keyRotationFor,
  createSessionAffinity,
  defaultLoadBalancerSettings,
  planKeys,
  planRequest,
  RateLimitBackoffs,
  RoutingLog,
  type BalancerProvider,
  type Direction,
  type PlannerComponents,
  type PlanInput,
  type RetryPolicy,
} from '../../packages/routing/src/index.ts'
import { pickWeighted } from '../../packages/routing/test/pick-weighted.ts'

const PROVIDERS = 20
const KEYS = 50
const MODEL = 'gpt-4o'
const BATCH = 1_000
const BATCHES = 2_000
const WARMUP_BATCHES = 200

const providers: BalancerProvider[] = Array.from({ length: PROVIDERS }, (_, providerIndex) => ({
  provider: `provider-${providerIndex}`,
  keys: Array.from({ length: KEYS }, (_, keyIndex) => ({
    id: `p${providerIndex}-k${keyIndex}`,
    name: `key ${keyIndex}`,
    models: keyIndex % 5 === 0 ? ['*'] : [MODEL, 'gpt-4o-mini'],
    weight: 1 + (keyIndex % 3),
  })),
}))

// The real held keys, with two keys held (a rejected credential, a rate limit) as a refusal leaves them.
let clock = 0
const holds = createHolds({ nodeId: 'bench', random: () => 0.5 })
const backoffs = new RateLimitBackoffs()
const balancer = createAdaptiveBalancer({ providers, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) || backoffs.isBackedOff(provider, keyId, model, clock) })
const refusal = (failureClass: 'credential' | 'rate_limit') => ({ failureClass, scope: 'model' as const, status: failureClass === 'credential' ? 401 : 429, waitHintMs: failureClass === 'credential' ? null : 60_000, message: 'refused', code: null })
holds.recordAnswer({ provider: 'provider-3', keyId: 'p3-k7', model: MODEL, startedAt: 1, now: 1, check: false, failure: refusal('credential') })
holds.recordAnswer({ provider: 'provider-11', keyId: 'p11-k20', model: MODEL, startedAt: 1, now: 1, check: false, failure: refusal('rate_limit') })
balancer.holdsChanged()

// Give the routes a history so the weights differ: latencies vary per provider, a few keys fail.
let now = 0
for (let cycle = 0; cycle < 12; cycle++) {
  now += 5_000
  for (const entry of providers) {
    const providerIndex = Number(entry.provider.slice('provider-'.length))
    for (const key of entry.keys) {
      const route = { provider: entry.provider, model: MODEL, keyId: key.id }
      for (let attempt = 0; attempt < 4; attempt++) {
        balancer.attemptStarted(route, now)
        const failing = key.id.endsWith('-k13') && attempt < 2
        balancer.attemptFinished({ ...route, failureClass: failing ? 'transient' : null, latencyMs: 600 + providerIndex * 40, completionTokens: 40, now })
      }
    }
  }
  balancer.recompute(now)
}
clock = now

// What the gateway hands the planner: its keys per provider and model (cached per model, as the registry does).
const keysByProvider = new Map(providers.map((entry) => [entry.provider, new Map([[MODEL, entry.keys.filter((key) => key.models.includes('*') || key.models.includes(MODEL))]])]))
const planner: PlannerComponents = {
  balancer,
  holds,
  sessions: createSessionAffinity({ capacity: 100_000, idleMs: 3_600_000 }),
  backoffs,
  keysFor: (provider, model) => keysByProvider.get(provider)?.get(model),
}
planner.sessions.remember('session-1', MODEL, { provider: 'provider-5', keyId: 'p5-k2' }, now)
const policy: RetryPolicy = { maxRetries: 2, backoffInitialMs: 500, backoffMaxMs: 5_000 }

const settings = defaultLoadBalancerSettings
const random = Math.random
const appendSettings = { ...settings, append_fallbacks_to_pinned: true }
const staticSettings = { ...settings, route_selection_enabled: false }
const configured: Direction[] = [{ provider: 'provider-4', model: MODEL }]
const weights = Array.from({ length: KEYS }, (_, index) => 1 + (index % 7))
const log = RoutingLog.off

/** One request as the engine plans it: providers, the first target's keys, its rotation's first draw. */
function request(input: Omit<PlanInput, 'now' | 'random' | 'log' | 'directKey' | 'fallbacks' | 'sessionId'> & Partial<PlanInput>): number {
  const plan = planRequest(planner, { fallbacks: [], sessionId: null, directKey: false, now: clock, random, log, ...input })!
  const target = plan.targets[0]!
  const keys = keysByProvider.get(target.provider)!.get(MODEL)!
  const keyPlan = planKeys(planner, target, keys, { settings: input.settings, now: clock, log })
  const rotation = keyRotationFor(keyPlan, policy, random)
  const step = rotation.first()
  return step.kind === 'attempt' ? step.keyIndex + plan.targets.length : 0
}

let sink = 0
const cases: Record<string, () => void> = {
  'request plan: no provider named': () => {
    sink += request({ model: MODEL, pinnedProvider: undefined, settings })
  },
  'request plan: pinned, fallbacks appended': () => {
    sink += request({ model: MODEL, pinnedProvider: 'provider-2', fallbacks: configured, settings: appendSettings })
  },
  'request plan: pinned to a provider with a held key': () => {
    sink += request({ model: MODEL, pinnedProvider: 'provider-3', settings })
  },
  'request plan: key selection off (static weights)': () => {
    sink += request({ model: MODEL, pinnedProvider: 'provider-7', settings: staticSettings })
  },
  'request plan: a session kept on its key': () => {
    sink += request({ model: MODEL, pinnedProvider: undefined, sessionId: 'session-1', settings })
  },
  'rotation: the next key after a rate limit': () => {
    const rotation = new KeyRotation({ weights, policy, random })
    rotation.first()
    const step = rotation.next({ failureClass: 'rate_limit', waitHintMs: null })
    sink += step.kind === 'attempt' ? step.keyIndex : 0
  },
  'baseline: pickWeighted over 50 weights': () => {
    sink += pickWeighted(weights, random)
  },
}
function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

// `node --import tsx bench/data-plane/selection.ts session` runs only the cases whose name contains "session" (for a CPU profile).
const only = process.argv[2]
const rows: string[] = []
for (const [name, run] of Object.entries(cases)) {
  if (only !== undefined && !name.includes(only)) continue
  const perRequest: number[] = []
  for (let batch = 0; batch < WARMUP_BATCHES + BATCHES; batch++) {
    const start = process.hrtime.bigint()
    for (let request = 0; request < BATCH; request++) run()
    const elapsed = Number(process.hrtime.bigint() - start) / BATCH
    if (batch >= WARMUP_BATCHES) perRequest.push(elapsed)
  }
  perRequest.sort((left, right) => left - right)
  const format = (nanoseconds: number) => `${(nanoseconds / 1_000).toFixed(3)} us`
  rows.push(`| ${name} | ${format(quantile(perRequest, 0.5))} | ${format(quantile(perRequest, 0.99))} |`)
}

console.log(`Node ${process.version}, ${PROVIDERS} providers x ${KEYS} keys, ${BATCHES} batches of ${BATCH} requests (median and p99 of per-batch averages)\n`)
console.log('| case | median / request | p99 / request |')
console.log('| --- | --- | --- |')
for (const row of rows) console.log(row)
if (sink === Number.NEGATIVE_INFINITY) console.log('unreachable, keeps the work alive')
