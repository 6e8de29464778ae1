/**
 * Micro-benchmark of the hot path of adaptive load balancing: provider (direction) + key selection
 * per request, with 20 providers x 50 keys all serving one model (design.md budget: median <= 1 us,
 * p99 <= 5 us per request).
 *
 * Run from the repository root:  node --import tsx bench/selection.ts
 *
 * Each case runs batches of BATCH requests timed with process.hrtime.bigint; the figures are the
 * median and p99 of the per-batch averages (per request), after a warm-up.
 */
import {
  createAdaptiveBalancer,
  defaultLoadBalancerSettings,
  type BalancerProvider,
  type Direction,
} from '../packages/routing/src/adaptive/index.ts'
import { pickWeighted } from '../packages/routing/src/selection/weighted.ts'

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

// A realistic held-keys answer: a set lookup by provider + key, with a few keys held.
const held = new Set(['provider-3/p3-k7', 'provider-11/p11-k20'])
const isHeld = (provider: string, keyId: string) => held.size > 0 && held.has(`${provider}/${keyId}`)

const balancer = createAdaptiveBalancer({ providers, isHeld })

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

const settings = defaultLoadBalancerSettings
const random = Math.random
const appendSettings = { ...settings, append_fallbacks_to_pinned: true }
const configured: Direction[] = [{ provider: 'provider-4', model: MODEL }]
const exclude = new Set(['p0-k1', 'p1-k1', 'p2-k1'])
const weights = Array.from({ length: KEYS }, (_, index) => 1 + (index % 7))

let sink = 0
const cases: Record<string, () => void> = {
  'direction + key (no provider named)': () => {
    const direction = balancer.selectDirection(MODEL, { settings, random })
    const key = balancer.selectKey(direction.primary!.provider, MODEL, random)
    sink += key.weight
  },
  'direction + key (pinned, fallbacks appended)': () => {
    const direction = balancer.selectDirection(MODEL, { settings: appendSettings, pinnedProvider: 'provider-2', configuredFallbacks: configured, random })
    const key = balancer.selectKey(direction.primary!.provider, MODEL, random)
    sink += key.weight + direction.fallbacks.length
  },
  'key only, static weights (key selection off)': () => {
    sink += balancer.selectKey('provider-7', MODEL, random, { routeSelectionEnabled: false }).weight
  },
  'key only, retry with 1 key excluded': () => {
    sink += balancer.selectKey(`provider-${Math.floor(random() * 3)}`, MODEL, random, { exclude }).weight
  },
  'baseline: pickWeighted over 50 weights': () => {
    sink += pickWeighted(weights, random)
  },
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

const rows: string[] = []
for (const [name, run] of Object.entries(cases)) {
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
