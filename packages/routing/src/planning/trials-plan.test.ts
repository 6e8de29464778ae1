/**
 * Trials in request planning (issue 35, item 8): what a request does while a provider is down
 * (503s, which hold nothing), on a fake clock.
 */
import { describe, expect, it } from 'vitest'
import { routeState } from '../../test/engine-fixture.ts'
import { createAdaptiveBalancer } from '../adaptive/balancer.ts'
import { createSessionAffinity } from '../adaptive/session.ts'
import { defaultLoadBalancerSettings, type BalancerProvider, type RouteRef } from '../adaptive/types.ts'
import { createHolds } from '../holds/holds.ts'
import { createTrials } from '../trials/trials.ts'
import { TRIAL_CLAIM_SETTLE_MS, TRIAL_FIRST_WAIT_MS, TRIAL_MAX_WAIT_MS, trialWaitMs } from '../trials/timing.ts'
import { RateLimitBackoffs } from './backoffs.ts'
import { keyRotationFor, planKeys } from './key-plan.ts'
import { RoutingLog } from './log.ts'
import { planRequest } from './request-plan.ts'
import type { PlannerComponents } from './types.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [
  { provider: 'openai', keys: [{ id: 'o1', name: 'prod-1', models: [MODEL], weight: 1 }, { id: 'o2', name: 'prod-2', models: [MODEL], weight: 1 }] },
  { provider: 'azure', keys: [{ id: 'a1', name: 'eu', models: [MODEL], weight: 1 }] },
]
const REROUTE = { ...defaultLoadBalancerSettings, reroute_failed_directions: true }
const route = (keyId: string): RouteRef => ({ provider: 'openai', model: MODEL, keyId })

function setup(nodeId = 'node-a', peers = 0, region = 'eu') {
  const holds = createHolds({ nodeId, random: () => 0.5 })
  const trials = createTrials({ nodeId, region })
  trials.setPeers(peers)
  const balancer = createAdaptiveBalancer({ providers, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model), trials })
  const components: PlannerComponents = { balancer, holds, sessions: createSessionAffinity({ capacity: 10, idleMs: 60_000 }), backoffs: new RateLimitBackoffs(), keysFor: (provider) => providers.find((entry) => entry.provider === provider)?.keys }
  /** One attempt on a route, answered at `now` after `latencyMs`. */
  const answer = (keyId: string, now: number, failureClass: 'transient' | null, latencyMs = 10) => {
    balancer.attemptStarted(route(keyId), now - latencyMs)
    balancer.attemptFinished({ ...route(keyId), failureClass, latencyMs, now })
  }
  /** openai answers 503: prod-1 fails at 0, 0.5 and 1 s (down for a second: failed at 1 s), then prod-2 at 1.1, 1.6 and 2.1 s. */
  const down = () => {
    for (const at of [0, 500, 1_000]) answer('o1', at, 'transient')
    for (const at of [1_100, 1_600, 2_100]) answer('o2', at, 'transient')
  }
  /** The plan of a request naming openai/gpt-4o with azure as its fallback. */
  const plan = (now: number, log = RoutingLog.off) => planRequest(components, { model: MODEL, pinnedProvider: 'openai', fallbacks: [{ provider: 'azure', model: MODEL }], sessionId: null, directKey: false, settings: REROUTE, now, random: () => 0.5, log })!
  return { balancer, trials, components, answer, down, plan }
}

describe('a provider down on every key', () => {
  it('fails once a key served nothing for a second, not at the next recompute, and moves a pinned request to its fallback', () => {
    const { balancer, answer, plan } = setup()
    answer('o1', 0, 'transient')
    answer('o1', 500, 'transient')
    answer('o1', 999, 'transient')
    expect(routeState(balancer, route('o1'))).toBe('healthy')
    answer('o1', 1_000, 'transient')
    expect(routeState(balancer, route('o1'))).toBe('failed')
    // One key of two failed: the provider still serves the model.
    expect(plan(1_050).targets[0]!.provider).toBe('openai')
    for (const at of [1_100, 1_600, 2_100]) answer('o2', at, 'transient')
    expect(routeState(balancer, route('o2'))).toBe('failed')
    const moved = plan(2_200)
    expect(moved.targets.map((target) => target.provider)).toEqual(['azure'])
    expect(moved.movedOff).toEqual({ provider: 'openai', reason: 'failed' })
  })

  it('sends one request per key and due time to it first (one key, one attempt), the fallback behind, and the rest to the fallback', () => {
    const { down, plan, components } = setup()
    down()
    const probes: string[] = []
    for (let now = 2_200; now < 2_100 + TRIAL_FIRST_WAIT_MS + 5_000; now += 100) {
      const log = new RoutingLog(true)
      const planned = plan(now, log)
      if (planned.trial === null || planned.trial === undefined) {
        expect(planned.targets.map((target) => target.provider)).toEqual(['azure'])
        continue
      }
      probes.push(`${now}:${planned.trial.keyId}`)
      expect(planned.targets.map((target) => `${target.provider}:${target.firstIsCheck}`)).toEqual(['openai:true', 'azure:false'])
      expect(planned.targets[planned.primary]!.provider).toBe('azure')
      const name = planned.trial.keyId === 'o1' ? 'prod-1' : 'prod-2'
      expect(log.lines.join('\n')).toContain(`Every key of openai failed for gpt-4o; trying key ${name} with this request first (the fleet's one trial)`)
      // One attempt on that key; the provider's other failed key is left out of this request.
      const keys = planKeys(components, planned.targets[0]!, providers[0]!.keys, { settings: REROUTE, now, log })
      const index = planned.trial.keyId === 'o1' ? 0 : 1
      expect(keys.first).toBe(index)
      expect(keys.check).toBe(index)
      expect(keys.leftOut).toEqual([expect.objectContaining({ keyId: planned.trial.keyId === 'o1' ? 'o2' : 'o1', reason: 'failed', dead: true })])
    }
    // Each key failed on its own (at 1 and 2.1 s): each has its own round, due 5 s later.
    expect(probes).toEqual([`${1_000 + TRIAL_FIRST_WAIT_MS}:o1`, `${2_100 + TRIAL_FIRST_WAIT_MS}:o2`])
  })

  it('waits a rung longer after a failed trial, and sends traffic back to it once a trial is served', () => {
    const { balancer, answer, down, plan } = setup()
    down()
    let now = 6_000
    expect(plan(now).trial).toEqual({ provider: 'openai', model: MODEL, keyId: 'o1' })
    answer('o1', now + 20, 'transient', 20)
    expect(balancer.trials.entry(route('o1'))).toMatchObject({ rung: 1, dueAt: now + 20 + trialWaitMs(1) })
    // prod-2's own trial at 7.1 s fails too.
    expect(plan(7_100).trial).toEqual({ provider: 'openai', model: MODEL, keyId: 'o2' })
    answer('o2', 7_120, 'transient', 20)
    for (now = 7_200; now < 6_020 + trialWaitMs(1); now += 100) expect(plan(now).trial ?? null).toBeNull()
    const served = plan(now)
    expect(served.trial).toEqual({ provider: 'openai', model: MODEL, keyId: 'o1' })
    answer('o1', now + 20, null, 20)
    expect(routeState(balancer, route('o1'))).toBe('recovering')
    // The provider is offered again: the pinned request goes to it, its fallback behind.
    expect(plan(now + 30).targets.map((target) => target.provider)).toEqual(['openai', 'azure'])
    expect(balancer.trials.entry(route('o1'))).toMatchObject({ state: 'served' })
  })
})

describe('a request that goes to the failed provider anyway', () => {
  it('(pinned, re-routing off) is no trial: it tries the keys as it would, and its success recovers the route', () => {
    const { balancer, components, down } = setup()
    down()
    const settings = defaultLoadBalancerSettings
    const planned = planRequest(components, { model: MODEL, pinnedProvider: 'openai', fallbacks: [{ provider: 'azure', model: MODEL }], sessionId: null, directKey: false, settings, now: 8_000, random: () => 0.5, log: RoutingLog.off })!
    expect(planned.reason).toBe('pinned_failed_kept')
    expect(planned.trial ?? null).toBeNull()
    const keys = planKeys(components, planned.targets[0]!, providers[0]!.keys, { settings, now: 8_000, log: RoutingLog.off })
    expect(keys).toMatchObject({ first: -1, check: -1, leftOut: [] })
    balancer.attemptStarted(route('o2'), 8_000)
    balancer.attemptFinished({ ...route('o2'), failureClass: null, latencyMs: 20, now: 8_020 })
    expect(routeState(balancer, route('o2'))).toBe('recovering')
    expect(balancer.trials.entry(route('o2'))).toMatchObject({ state: 'served' })
  })
})

describe('one failed key of a provider still serving', () => {
  it('gets the trial as the first key of one request per due time, and no other request', () => {
    const { balancer, answer, components } = setup()
    for (const at of [100, 600, 1_100]) answer('o1', at, 'transient')
    expect(routeState(balancer, route('o1'))).toBe('failed')
    const target = { provider: 'openai', model: MODEL, source: 'primary' as const, direct: false, firstKeyId: undefined, firstIsCheck: false }
    const firsts: number[] = []
    for (let now = 1_200; now < 1_100 + TRIAL_FIRST_WAIT_MS + 2_000; now += 100) {
      const keys = planKeys(components, target, providers[0]!.keys, { settings: defaultLoadBalancerSettings, now, log: RoutingLog.off })
      expect(keys.weights[0]).toBe(0)
      if (keys.check >= 0) {
        expect(keys.first).toBe(0)
        firsts.push(now)
      }
    }
    expect(firsts).toEqual([1_100 + TRIAL_FIRST_WAIT_MS])
  })
})

describe('a fleet', () => {
  it('recovers a route on every node whose route failed before a trial served, and not one that failed after', () => {
    const a = setup('node-a', 2)
    const b = setup('node-b', 2)
    const c = setup('node-c', 2)
    a.down()
    b.balancer.mergeTrials(a.trials.changes(), 2_150)
    b.down()
    // node-b joined node-a's rounds: nothing new to tell.
    expect(b.trials.changes()).toEqual([])
    // node-a takes prod-1's trial (claim, settle), and it is served.
    expect(a.plan(6_000).trial ?? null).toBeNull()
    b.balancer.mergeTrials(a.trials.changes(), 6_001)
    expect(b.plan(6_100).trial ?? null).toBeNull()
    expect(a.plan(6_000 + TRIAL_CLAIM_SETTLE_MS).trial).toEqual({ provider: 'openai', model: MODEL, keyId: 'o1' })
    a.answer('o1', 6_290, null, 40)
    // node-c's route fails only after the trial served (on requests of its own that were in flight).
    for (const at of [5_300, 5_800, 6_300]) c.answer('o1', at, 'transient')
    const shared = a.trials.changes()
    b.balancer.mergeTrials(shared, 6_350)
    c.balancer.mergeTrials(shared, 6_350)
    expect(routeState(b.balancer, route('o1'))).toBe('recovering')
    expect(routeState(c.balancer, route('o1'))).toBe('failed')
  })
})

describe('a failure found by a peer', () => {
  it('fails the route on the nodes of its region that served nothing since the outage began, and nowhere else', () => {
    const finder = setup('node-a', 3)
    const idle = setup('node-b', 3)
    const busy = setup('node-c', 3)
    const elsewhere = setup('node-d', 3, 'us')
    // node-c served prod-1 half a second into the run of failures node-a is about to see.
    busy.answer('o1', 500, null)
    for (const at of [0, 500, 1_000]) finder.answer('o1', at, 'transient')
    const opened = finder.trials.changes()
    for (const node of [idle, busy, elsewhere]) node.balancer.mergeTrials(opened, 1_010)
    expect([finder, idle, busy, elsewhere].map((node) => routeState(node.balancer, route('o1')))).toEqual(['failed', 'failed', 'healthy', 'healthy'])
    // node-b, which failed it on the peer's word, takes part in the same round.
    expect(idle.trials.entry(route('o1'))).toEqual(finder.trials.entry(route('o1')))
  })

  it('fails nothing on an old round a joining node pulls', () => {
    const finder = setup('node-a', 1)
    for (const at of [0, 500, 1_000]) finder.answer('o1', at, 'transient')
    const joining = setup('node-b', 1)
    joining.balancer.mergeTrials(finder.trials.entries(), 1_000 + TRIAL_MAX_WAIT_MS + 2_000)
    expect(routeState(joining.balancer, route('o1'))).toBe('healthy')
  })
})

describe('a 60 s outage, request by request on a fake clock', () => {
  const single: BalancerProvider[] = [
    { provider: 'openai', keys: [{ id: 'o1', name: 'primary', models: [MODEL], weight: 1 }] },
    { provider: 'azure', keys: [{ id: 'a1', name: 'backup', models: [MODEL], weight: 1 }] },
  ]
  const POLICY = { maxRetries: 0, backoffInitialMs: 10, backoffMaxMs: 20 }

  /** `count` nodes taking 10 requests a second between them, in turn; the primary answers 503 from 0 to 60 s. */
  function outage(count: number) {
    const nodes = Array.from({ length: count }, (_, index) => {
      const nodeId = `node-${'abcdef'[index]}`
      const holds = createHolds({ nodeId, random: () => 0.5 })
      const trials = createTrials({ nodeId })
      trials.setPeers(count - 1)
      const balancer = createAdaptiveBalancer({ providers: single, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model), trials })
      const components: PlannerComponents = { balancer, holds, sessions: createSessionAffinity({ capacity: 10, idleMs: 60_000 }), backoffs: new RateLimitBackoffs(), keysFor: (provider) => single.find((entry) => entry.provider === provider)?.keys }
      return { balancer, trials, components }
    })
    // Gossip within a few milliseconds: every change reaches every other node before the next request.
    const gossip = (from: (typeof nodes)[number], now: number) => {
      const changes = from.trials.changes()
      if (changes.length === 0) return
      for (const to of nodes) if (to !== from) from.balancer.mergeTrials(to.balancer.mergeTrials(changes, now + 2), now + 4)
    }
    let onPrimaryDuringOutage = 0
    const backAt = new Map<number, number>()
    for (let now = -5_000, sent = 0; now < 100_000; now += 100, sent++) {
      if (now % 5_000 === 0) for (const node of nodes) node.balancer.recompute(now)
      const index = sent % count
      const node = nodes[index]!
      const plan = planRequest(node.components, { model: MODEL, pinnedProvider: 'openai', fallbacks: [{ provider: 'azure', model: MODEL }], sessionId: null, directKey: false, settings: REROUTE, now, random: () => 0.5, log: RoutingLog.off })!
      gossip(node, now)
      for (const target of plan.targets) {
        const keys = single.find((entry) => entry.provider === target.provider)!.keys
        const keyPlan = planKeys(node.components, target, keys, { settings: REROUTE, now, log: RoutingLog.off })
        gossip(node, now)
        const step = keyRotationFor(keyPlan, POLICY, () => 0.5, true).first()
        if (step.kind !== 'attempt') continue
        const down = target.provider === 'openai' && now >= 0 && now < 60_000
        if (down) onPrimaryDuringOutage++
        if (target.provider === 'openai' && now >= 60_000 && !backAt.has(index)) backAt.set(index, now)
        const routeOf = { provider: target.provider, model: MODEL, keyId: keys[step.keyIndex]!.id }
        node.balancer.attemptStarted(routeOf, now)
        node.balancer.attemptFinished({ ...routeOf, failureClass: down ? 'transient' : null, latencyMs: 20, now: now + 20 })
        gossip(node, now + 20)
        if (!down) break
      }
    }
    return { onPrimaryDuringOutage, backAt: [...backAt.values()], nodes: count }
  }

  it('costs the primary under twenty attempts at 1 and at 3 nodes, one trial per due time across the fleet, then traffic returns on every node', () => {
    const alone = outage(1)
    const fleet = outage(3)
    // About a second of traffic to find it (the first node to; it tells the others), then one trial per due time: 5, 15, 35 s in.
    expect(alone.onPrimaryDuringOutage).toBeLessThan(20)
    expect(fleet.onPrimaryDuringOutage).toBeLessThan(20)
    const trialsDue = 3
    // The same at 3 nodes within one per due time, and one request per extra node: a node's second of failures ends on its own next request.
    expect(fleet.onPrimaryDuringOutage).toBeLessThanOrEqual(alone.onPrimaryDuringOutage + trialsDue + 2)
    for (const result of [alone, fleet]) {
      expect(result.backAt).toHaveLength(result.nodes)
      for (const at of result.backAt) expect(at).toBeLessThanOrEqual(60_000 + TRIAL_MAX_WAIT_MS + TRIAL_CLAIM_SETTLE_MS + 1_000)
    }
  })
})
