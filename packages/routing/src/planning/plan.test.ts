import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from '../adaptive/balancer.ts'
import { createSessionAffinity } from '../adaptive/session.ts'
import { defaultLoadBalancerSettings, type BalancerProvider } from '../adaptive/types.ts'
import { createHolds } from '../holds/holds.ts'
import { RateLimitBackoffs } from './backoffs.ts'
import { RoutingLog } from './log.ts'
import { planKeys } from './key-plan.ts'
import { planRequest } from './request-plan.ts'
import type { PlannerComponents } from './types.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [
  { provider: 'openai', keys: [{ id: 'o1', name: 'prod-1', models: [MODEL], weight: 1 }, { id: 'o2', name: 'prod-2', models: [MODEL], weight: 1 }] },
  { provider: 'azure', keys: [{ id: 'a1', name: 'eu', models: [MODEL], weight: 1 }] },
]

function setup() {
  const holds = createHolds({ nodeId: 'test', random: () => 0.5 })
  const backoffs = new RateLimitBackoffs()
  const balancer = createAdaptiveBalancer({ providers, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) })
  const components: PlannerComponents = { balancer, holds, sessions: createSessionAffinity({ capacity: 10, idleMs: 60_000 }), backoffs, keysFor: (provider) => providers.find((entry) => entry.provider === provider)?.keys }
  const refuse = (keyId: string, now: number) => {
    holds.recordAnswer({ provider: 'openai', keyId, model: MODEL, startedAt: now, now, check: false, failure: { failureClass: 'rate_limit', scope: 'model', status: 429, waitHintMs: 30_000, message: 'slow down', code: null } })
    balancer.holdsChanged()
  }
  return { components, refuse }
}

describe('planning a request', () => {
  it('n. with every key held and none due, says which key it sends the request to anyway, and plans one attempt', () => {
    const { components, refuse } = setup()
    refuse('o1', 1_000)
    refuse('o2', 2_000)
    const log = new RoutingLog(true)
    const plan = planRequest(components, { model: MODEL, pinnedProvider: 'openai', fallbacks: [], sessionId: null, directKey: false, settings: defaultLoadBalancerSettings, now: 5_000, random: () => 0.5, log })!
    const keys = planKeys(components, plan.targets[0]!, providers[0]!.keys, { settings: defaultLoadBalancerSettings, now: 5_000, log })
    expect(keys.everyKeyHeld).toBe(true)
    expect(keys.first).toBe(0)
    expect(keys.check).toBe(0)
    expect(keys.leftOut.map((key) => key.keyId)).toEqual(['o2'])
    expect(log.lines.join('\n')).toContain('sending this request to key prod-1 anyway')
    expect(log.lines.join('\n')).not.toContain('one of them')
  })

  it('plans the primary as the provider the request named, and its fallbacks behind it untouched with provider selection off', () => {
    const { components } = setup()
    const settings = { ...defaultLoadBalancerSettings, direction_selection_enabled: false, reroute_failed_directions: true }
    const plan = planRequest(components, { model: MODEL, pinnedProvider: 'azure', fallbacks: [{ provider: 'openai', model: MODEL }], sessionId: null, directKey: true, settings, now: 1, random: () => 0.5, log: RoutingLog.off })!
    expect(plan.targets.map((target) => `${target.provider}:${target.source}:${target.direct}`)).toEqual(['azure:primary:true', 'openai:fallback:false'])
    expect(plan.primary).toBe(0)
    expect(plan.pickedBy).toBe('request')
    expect(plan.check).toBeNull()
  })

  it('shares one key plan between plain draws while no left-out key is due, and checks the key the moment it is', () => {
    const { components, refuse } = setup()
    refuse('o1', 1_000)
    const target = planRequest(components, { model: MODEL, pinnedProvider: 'openai', fallbacks: [], sessionId: null, directKey: false, settings: defaultLoadBalancerSettings, now: 2_000, random: () => 0.5, log: RoutingLog.off })!.targets[0]!
    const plan = (now: number, log = RoutingLog.off) => planKeys(components, target, providers[0]!.keys, { settings: defaultLoadBalancerSettings, now, log })
    const early = plan(2_000)
    expect(early).toMatchObject({ first: -1, check: -1, leftOut: [{ keyId: 'o1', reason: 'held', dead: false }] })
    expect(plan(3_000)).toBe(early)
    // A log still gets its line from the shared plan.
    const log = new RoutingLog(true)
    expect(plan(3_000, log)).toBe(early)
    expect(log.lines.join('\n')).toContain('1 of 2')
    const due = early.leftOut[0]!.until
    const checked = plan(due)
    expect(checked).toMatchObject({ first: 0, check: 0, leftOut: [] })
    // The next request finds the slot taken: o1 is left out again, and nothing is shared while it is past due.
    const after = plan(due + 1)
    expect(after).toMatchObject({ first: -1, check: -1, leftOut: [{ keyId: 'o1' }] })
    expect(plan(due + 2)).not.toBe(after)
    // A new hold is announced (holdsChanged): the next plan sees it.
    refuse('o2', due + 3)
    expect(plan(due + 4).everyKeyHeld).toBe(true)
  })

  it('plans a pinned request with appended fallbacks once per table, and anew when the table changes', () => {
    const { components } = setup()
    const settings = { ...defaultLoadBalancerSettings, append_fallbacks_to_pinned: true, prune_failed_fallbacks: true }
    const input = (now: number) => ({ model: MODEL, pinnedProvider: 'azure', fallbacks: [{ provider: 'openai', model: MODEL }], sessionId: null, directKey: false, settings, now, random: () => 0.5, log: RoutingLog.off })
    const first = planRequest(components, input(1))!
    expect(first.targets.map((target) => `${target.provider}:${target.source}`)).toEqual(['azure:primary', 'openai:fallback'])
    expect(planRequest(components, input(2))!.targets).toBe(first.targets)
    // The caller's own key is marked on a copy: the shared plan is untouched.
    const direct = planRequest(components, { ...input(3), directKey: true })!
    expect(direct.targets[0]!.direct).toBe(true)
    expect(first.targets[0]!.direct).toBe(false)
    // openai fails on every key: its table is rebuilt, and pruning drops the configured fallback.
    for (const keyId of ['o1', 'o2']) components.balancer.failRoute({ provider: 'openai', model: MODEL, keyId }, 4)
    const after = planRequest(components, input(5))!
    expect(after.targets.map((target) => target.provider)).toEqual(['azure'])
  })
})
