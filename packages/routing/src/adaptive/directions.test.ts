import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from './balancer.ts'
import { defaultLoadBalancerSettings, type BalancerProvider, type Direction, type LoadBalancerSettings } from './types.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [
  { provider: 'openai', keys: [{ id: 'o1', name: 'openai-1', models: ['*'], weight: 1 }, { id: 'o2', name: 'openai-2', models: [MODEL], weight: 1 }] },
  { provider: 'azure', keys: [{ id: 'a1', name: 'azure-1', models: [MODEL], weight: 1 }] },
  { provider: 'groq', keys: [{ id: 'g1', name: 'groq-1', models: [MODEL, 'llama'], weight: 1 }] },
  { provider: 'mistral', keys: [{ id: 'm1', name: 'mistral-1', models: ['mistral-large'], weight: 1 }] },
]
const keysOf = (provider: string) => providers.find((entry) => entry.provider === provider)!.keys.map((key) => key.id)

/** A balancer where the named providers are failed for gpt-4o (every key refused). */
function balancerWith(failed: readonly string[]) {
  const balancer = createAdaptiveBalancer({ providers, isHeld: () => false })
  for (const provider of failed) for (const keyId of keysOf(provider)) balancer.failRoute({ provider, model: MODEL, keyId }, 0)
  return balancer
}

const at = (text: string): Direction => {
  const [provider, model] = text.split('/') as [string, string]
  return { provider, model }
}
const show = (targets: readonly Direction[]) => targets.map((target) => `${target.provider}/${target.model}`)

interface Row {
  name: string
  switches: Partial<LoadBalancerSettings>
  pinned?: string
  configured?: string[]
  failed?: string[]
  primary: string | null
  fallbacks: string[]
  reason: string
  pruned?: string[]
}

// The semantics of the five switches (reference: adaptive-load-balancing, "Configuration" and
// "Scope & Limitations"). Providers are ranked in configured order when their scores tie.
const rows: Row[] = [
  { name: 'no provider named: the best, the other healthy ones behind it', switches: {}, primary: 'openai/gpt-4o', fallbacks: ['azure/gpt-4o', 'groq/gpt-4o'], reason: 'scored' },
  { name: 'no provider named: a failed provider is left out', switches: {}, failed: ['groq'], primary: 'openai/gpt-4o', fallbacks: ['azure/gpt-4o'], reason: 'scored' },
  { name: 'no provider named: the failed best provider is passed over', switches: {}, failed: ['openai'], primary: 'azure/gpt-4o', fallbacks: ['groq/gpt-4o'], reason: 'scored' },
  { name: 'configured fallbacks come first, the appended ones after', switches: {}, configured: ['groq/gpt-4o', 'mistral/mistral-large'], primary: 'openai/gpt-4o', fallbacks: ['groq/gpt-4o', 'mistral/mistral-large', 'azure/gpt-4o'], reason: 'scored' },
  { name: 'pruning off keeps a failed configured fallback', switches: {}, configured: ['groq/gpt-4o'], failed: ['groq'], primary: 'openai/gpt-4o', fallbacks: ['groq/gpt-4o', 'azure/gpt-4o'], reason: 'scored' },
  { name: 'pruning on drops a failed configured fallback', switches: { prune_failed_fallbacks: true }, configured: ['groq/gpt-4o'], failed: ['groq'], primary: 'openai/gpt-4o', fallbacks: ['azure/gpt-4o'], reason: 'scored', pruned: ['groq/gpt-4o'] },
  { name: 'every provider failed: the first is sent anyway', switches: {}, failed: ['openai', 'azure', 'groq'], primary: 'openai/gpt-4o', fallbacks: [], reason: 'all_failed' },
  { name: 'provider selection off: first configured provider, fallbacks untouched', switches: { direction_selection_enabled: false, prune_failed_fallbacks: true }, configured: ['groq/gpt-4o'], failed: ['openai', 'groq'], primary: 'openai/gpt-4o', fallbacks: ['groq/gpt-4o'], reason: 'static' },
  { name: 'pinned, defaults: passes through untouched', switches: {}, pinned: 'azure', configured: ['groq/gpt-4o'], primary: 'azure/gpt-4o', fallbacks: ['groq/gpt-4o'], reason: 'pinned' },
  { name: 'pinned, pruning alone does not touch it', switches: { prune_failed_fallbacks: true }, pinned: 'azure', configured: ['groq/gpt-4o'], failed: ['groq'], primary: 'azure/gpt-4o', fallbacks: ['groq/gpt-4o'], reason: 'pinned' },
  { name: 'pinned, append on: healthy providers appended behind configured', switches: { append_fallbacks_to_pinned: true }, pinned: 'azure', configured: ['groq/gpt-4o'], primary: 'azure/gpt-4o', fallbacks: ['groq/gpt-4o', 'openai/gpt-4o'], reason: 'pinned' },
  { name: 'pinned, append on, no fallbacks of its own: still gets a chain', switches: { append_fallbacks_to_pinned: true }, pinned: 'groq', primary: 'groq/gpt-4o', fallbacks: ['openai/gpt-4o', 'azure/gpt-4o'], reason: 'pinned' },
  { name: 'pinned, append + prune on: failed configured fallback pruned', switches: { append_fallbacks_to_pinned: true, prune_failed_fallbacks: true }, pinned: 'azure', configured: ['groq/gpt-4o'], failed: ['groq'], primary: 'azure/gpt-4o', fallbacks: ['openai/gpt-4o'], reason: 'pinned', pruned: ['groq/gpt-4o'] },
  { name: 'pinned, append on but provider selection off: untouched', switches: { append_fallbacks_to_pinned: true, direction_selection_enabled: false }, pinned: 'azure', primary: 'azure/gpt-4o', fallbacks: [], reason: 'pinned' },
  { name: 'pinned failed, re-route off: kept on it, untouched', switches: {}, pinned: 'openai', configured: ['groq/gpt-4o'], failed: ['openai'], primary: 'openai/gpt-4o', fallbacks: ['groq/gpt-4o'], reason: 'pinned_failed_kept' },
  { name: 'pinned failed, re-route off, no healthy provider left: kept, and re-routing could not have helped', switches: {}, pinned: 'openai', failed: ['openai', 'azure', 'groq'], primary: 'openai/gpt-4o', fallbacks: [], reason: 'pinned_no_alternative' },
  { name: 'pinned failed, provider selection off, no healthy provider left: kept, nothing to avoid', switches: { reroute_failed_directions: true, direction_selection_enabled: false }, pinned: 'openai', failed: ['openai', 'azure', 'groq'], primary: 'openai/gpt-4o', fallbacks: [], reason: 'pinned_no_alternative' },
  { name: 'pinned failed, re-route off, append on: kept, with healthy fallbacks', switches: { append_fallbacks_to_pinned: true }, pinned: 'openai', failed: ['openai'], primary: 'openai/gpt-4o', fallbacks: ['azure/gpt-4o', 'groq/gpt-4o'], reason: 'pinned_failed_kept' },
  { name: 'pinned failed, re-route on: moved to the best healthy provider, handled as if appending', switches: { reroute_failed_directions: true }, pinned: 'openai', configured: ['azure/gpt-4o'], failed: ['openai'], primary: 'azure/gpt-4o', fallbacks: ['groq/gpt-4o'], reason: 'pinned_rerouted' },
  { name: 'pinned failed, re-route + prune on: failed configured fallback pruned', switches: { reroute_failed_directions: true, prune_failed_fallbacks: true }, pinned: 'openai', configured: ['groq/gpt-4o', 'mistral/mistral-large'], failed: ['openai', 'groq'], primary: 'azure/gpt-4o', fallbacks: ['mistral/mistral-large'], reason: 'pinned_rerouted', pruned: ['groq/gpt-4o'] },
  { name: 'pinned failed, re-route on, no healthy provider: kept', switches: { reroute_failed_directions: true }, pinned: 'openai', failed: ['openai', 'azure', 'groq'], primary: 'openai/gpt-4o', fallbacks: [], reason: 'pinned_no_alternative' },
  { name: 'pinned failed, re-route on but provider selection off: untouched', switches: { reroute_failed_directions: true, direction_selection_enabled: false }, pinned: 'openai', failed: ['openai'], primary: 'openai/gpt-4o', fallbacks: [], reason: 'pinned_failed_kept' },
  { name: 'pinned healthy, re-route on: nothing to re-route, untouched', switches: { reroute_failed_directions: true }, pinned: 'azure', primary: 'azure/gpt-4o', fallbacks: [], reason: 'pinned' },
  { name: 'key selection off changes nothing at the provider level', switches: { route_selection_enabled: false }, failed: ['openai'], primary: 'azure/gpt-4o', fallbacks: ['groq/gpt-4o'], reason: 'scored' },
]

describe('selectDirection under the five switches', () => {
  it.each(rows)('$name', (row) => {
    const settings = { ...defaultLoadBalancerSettings, ...row.switches }
    const balancer = balancerWith(row.failed ?? [])
    const decision = balancer.selectDirection(MODEL, {
      settings,
      ...(row.pinned === undefined ? {} : { pinnedProvider: row.pinned }),
      configuredFallbacks: (row.configured ?? []).map(at),
    })
    expect(decision.primary === null ? null : show([decision.primary])[0]).toBe(row.primary)
    expect(show(decision.fallbacks)).toEqual(row.fallbacks)
    expect(decision.reason).toBe(row.reason)
    expect(show(decision.pruned)).toEqual(row.pruned ?? [])
  })

  it('serves any model with a "*" key, and answers no_provider when nobody serves it', () => {
    expect(balancerWith([]).selectDirection('claude-9', { settings: defaultLoadBalancerSettings })).toMatchObject({ primary: { provider: 'openai' }, fallbacks: [] })
    const withoutStar = createAdaptiveBalancer({ providers: providers.slice(1), isHeld: () => false })
    expect(withoutStar.selectDirection('claude-9', { settings: defaultLoadBalancerSettings })).toMatchObject({ primary: null, reason: 'no_provider' })
  })

  it('counts a provider failed only when every key serving the model is failed; a never-used key keeps it in', () => {
    const held = new Set<string>()
    const balancer = createAdaptiveBalancer({ providers, isHeld: (provider, keyId) => held.has(`${provider}/${keyId}`) })
    balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'o1' }, 0)
    let decision = balancer.selectDirection(MODEL, { settings: defaultLoadBalancerSettings })
    expect(decision.primary?.provider).toBe('openai')
    expect(decision.skipped).toEqual([])
    held.add('openai/o2')
    balancer.holdsChanged()
    decision = balancer.selectDirection(MODEL, { settings: defaultLoadBalancerSettings })
    expect(decision.primary?.provider).toBe('azure')
    expect(show(decision.skipped)).toEqual(['openai/gpt-4o'])
  })

  it('spreads requests over equally healthy providers, and gives one back from a refusal a quarter of its share at first, not the minimum (issue 36, item 8)', () => {
    const balancer = balancerWith([])
    const draws = 1000
    const count = () => {
      const counts = new Map<string, number>()
      for (let step = 0; step < draws; step++) {
        const decision = balancer.selectDirection(MODEL, { settings: defaultLoadBalancerSettings, random: () => (step + 0.5) / draws })
        counts.set(`${decision.primary!.provider} ${decision.reason}`, (counts.get(`${decision.primary!.provider} ${decision.reason}`) ?? 0) + 1)
      }
      return Object.fromEntries(counts)
    }
    expect(count()).toEqual({ 'openai scored': 333, 'azure scored': 334, 'groq scored': 333 })

    // Azure's only key was refused, then released to recovering at the bottom of its ramp: about
    // RECOVERY_START of the share it will have (weight 28.75 of 100: 0.2875 against 1 and 1), not the 2 % floor.
    balancer.failRoute({ provider: 'azure', model: MODEL, keyId: 'a1' }, 0)
    balancer.releaseRoute({ provider: 'azure', model: MODEL, keyId: 'a1' }, 0)
    expect(count()).toEqual({ 'openai scored': 437, 'groq scored': 437, 'azure scored_lower': 126 })
    const lower = balancer.selectDirection(MODEL, { settings: defaultLoadBalancerSettings, random: () => 0.99 })
    expect(show(lower.fallbacks)).toEqual(['openai/gpt-4o', 'groq/gpt-4o'])
  })
})
