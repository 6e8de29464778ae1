/**
 * The router (issue 35, item 2) as the gateway drives it: `next()` for an attempt, `report()` for
 * how it went, and nothing else per attempt. The rules each case shows used to live in the
 * gateway's engine and dispatcher.
 */
import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from '../adaptive/balancer.ts'
import { createSessionAffinity } from '../adaptive/session.ts'
import { defaultLoadBalancerSettings, keyServesModel, type BalancerKey, type BalancerProvider } from '../adaptive/types.ts'
import type { AttemptFailure, FailureClass } from '../failures/failure-class.ts'
import { createHolds } from '../holds/holds.ts'
import { RateLimitBackoffs } from './backoffs.ts'
import { RoutingLog } from './log.ts'
import type { AttemptStep, RouteEnd, RouteTarget, TargetFit } from './request-route.ts'
import { createRouter } from './router.ts'
import type { PlannedTarget } from './types.ts'

const PROVIDERS: BalancerProvider[] = [
  {
    provider: 'openai',
    keys: [
      { id: 'o1', name: 'first', models: ['gpt-4o'], weight: 1 },
      { id: 'o2', name: 'second', models: ['gpt-4o'], weight: 1 },
    ],
  },
  { provider: 'azure', keys: [{ id: 'a1', name: 'backup', models: ['gpt-4o'], weight: 1 }] },
]
const POLICY = { maxRetries: 2, backoffInitialMs: 100, backoffMaxMs: 1_000 }

function failure(failureClass: FailureClass, status: number, waitHintMs: number | null = null): AttemptFailure {
  return { failureClass, scope: failureClass === 'credential' ? 'key' : 'model', status, waitHintMs, message: `${failureClass} said`, code: null }
}

/** A node's router over PROVIDERS on a fake clock, and a request naming `openai/gpt-4o` with `azure/gpt-4o` behind it. */
function setup(options: { continues?: readonly string[]; fit?: (target: RouteTarget) => TargetFit; sessionId?: string } = {}) {
  let clock = 1_000_000
  const holds = createHolds({ nodeId: 'test', random: () => 0.5 })
  const backoffs = new RateLimitBackoffs()
  const balancer = createAdaptiveBalancer({ providers: PROVIDERS, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) || backoffs.isBackedOff(provider, keyId, model, clock) })
  const sessions = createSessionAffinity({ capacity: 10, idleMs: 60_000 })
  const keysFor = (provider: string, model: string): readonly BalancerKey[] | undefined => PROVIDERS.find((entry) => entry.provider === provider)?.keys.filter((key) => keyServesModel(key, model))
  const router = createRouter({ balancer, holds, sessions, backoffs, keysFor, settings: () => defaultLoadBalancerSettings, now: () => clock, random: () => 0, keyName: (_, keyId) => keyId })
  const route = (log = new RoutingLog(true)) => {
    const plan = router.plan({ model: 'gpt-4o', pinnedProvider: 'openai', fallbacks: [{ provider: 'azure', model: 'gpt-4o' }], sessionId: options.sessionId ?? null, directKey: false, log })!
    const targets = plan.targets.map((planned: PlannedTarget): RouteTarget => ({
      planned,
      keys: () => keysFor(planned.provider, planned.model) ?? [],
      policy: POLICY,
      deadlines: { requestMs: 30_000 },
      continues: options.continues?.includes(planned.provider) ?? false,
    }))
    return { log, request: router.route<RouteTarget, BalancerKey>(plan, targets, { sessionId: options.sessionId ?? null, log, streams: true, filter: { fit: options.fit ?? (() => 'fits') } }) }
  }
  return { router, holds, backoffs, balancer, sessions, route, tick: (ms: number) => (clock += ms), now: () => clock }
}

type Step = AttemptStep<RouteTarget, BalancerKey>
const where = (step: Step) => `${step.target.planned.provider}/${step.key.id}`

describe('the router', () => {
  it('retries a failing key, then falls back, and ends with the primary\'s failure: two calls per attempt', () => {
    const { route } = setup()
    const { request } = route()
    const tried: string[] = []
    for (;;) {
      const step = request.next()
      if (step.kind === 'end') {
        expect(step).toMatchObject({ outcome: 'failed', failure: { reason: 'retries_exhausted', last: { failureClass: 'transient', status: 503 } } })
        expect((step as Extract<RouteEnd<RouteTarget, BalancerKey>, { outcome: 'failed' }>).failure.target.planned.provider).toBe('openai')
        break
      }
      tried.push(where(step))
      const effects = request.report(step, { sent: true, startedAt: 0, failure: failure('transient', 503), served: false })
      expect(effects.failure).toMatchObject({ failureClass: 'transient' })
    }
    // A 503 says nothing about the key: the same key and its max_retries retries, then the fallback's
    // key the same way; the caller gets the primary's failure.
    const each = (entry: string) => Array.from({ length: POLICY.maxRetries + 1 }, () => entry)
    expect(tried).toEqual([...each(tried[0]!), ...each('azure/a1')])
    expect(tried[0]).toMatch(/^openai\//)
  })

  it('a refused key is held and named in the effects; the request moves to the other key at once', () => {
    const { route, holds } = setup()
    const { request, log } = route()
    const first = request.next() as Step
    const effects = request.report(first, { sent: true, startedAt: 0, failure: failure('credential', 401), served: false })
    expect(effects.holds?.changes).toEqual([expect.objectContaining({ kind: 'placed', provider: 'openai', key: first.key.id, reason: 'credential' })])
    expect(effects.holds?.changed.length).toBe(1)
    expect(holds.isHeld('openai', first.key.id, 'gpt-4o')).toBe(true)
    const second = request.next() as Step
    expect(second.kind).toBe('attempt')
    expect(second.key.id).not.toBe(first.key.id)
    expect(second.delayMs).toBe(0)
    expect(log.lines.some((line) => line.includes('refused key'))).toBe(true)
  })

  it("a request's retries on keys it held leave their holds on the first rung; the next check climbs one rung (issue 36, item 6)", () => {
    const { route, holds, tick, now } = setup()
    const { request } = route()
    const tried: string[] = []
    for (let step = request.next(); step.kind === 'attempt'; step = request.next()) {
      tried.push(where(step))
      expect(step.check).toBe(false)
      // A 429 without a Retry-After: rotation goes to the other key, then back to each on a retry.
      request.report(step, { sent: true, startedAt: now(), failure: failure(step.target.planned.provider === 'openai' ? 'rate_limit' : 'transient', 429), served: false })
      tick(100)
    }
    expect(tried.filter((entry) => entry.startsWith('openai/')).length).toBeGreaterThan(2)
    const rungs = () => holds.conditions().map((condition) => `${condition.key_id}:${condition.rung}:${condition.checks}`).sort()
    expect(rungs()).toEqual(['o1:0:0', 'o2:0:0'])
    // The wait runs out: the next request is one key's check, refused again: that key one rung up, the other untouched.
    tick(35_000)
    const check = route().request
    const first = check.next() as Step
    expect(first.check).toBe(true)
    check.report(first, { sent: true, startedAt: now(), failure: failure('rate_limit', 429), served: false })
    expect(rungs()).toEqual([`${first.key.id}:1:1`, `${first.key.id === 'o1' ? 'o2' : 'o1'}:0:0`].sort())
  })

  it('the caller\'s fault on the primary ends the chain; a context too long ends the target only', () => {
    const { route } = setup()
    const fault = route().request
    const step = fault.next() as Step
    fault.report(step, { sent: true, startedAt: 0, failure: failure('caller_fault', 400), served: false })
    expect(fault.next()).toMatchObject({ kind: 'end', outcome: 'failed', failure: { reason: 'caller_fault' } })

    const long = route().request
    const primary = long.next() as Step
    long.report(primary, { sent: true, startedAt: 0, failure: failure('context_length', 400), served: false })
    const fallback = long.next() as Step
    expect(fallback.target.planned.provider).toBe('azure')
  })

  it('a served answer remembers the session\'s key and backs off a key whose window ran out, as effects', () => {
    const { route, sessions, backoffs, now } = setup({ sessionId: 'session-1' })
    const { request } = route()
    const step = request.next() as Step
    const effects = request.report(step, { sent: true, startedAt: now(), failure: null, served: true, rateLimit: { untilMs: now() + 30_000, window: 'requests', remaining: 0 }, usage: { promptTokens: 5, completionTokens: 7 } })
    expect(effects.failure).toBeNull()
    expect(effects.backoff).toEqual({ provider: 'openai', keyId: step.key.id, model: 'gpt-4o', untilMs: now() + 30_000 })
    expect(backoffs.isBackedOff('openai', step.key.id, 'gpt-4o', now())).toBe(true)
    expect(sessions.recall('session-1', 'gpt-4o', now())).toMatchObject({ provider: 'openai', keyId: step.key.id })
  })

  it('a send that never went out is nobody\'s failure; the caller leaving during a wait ends the request', () => {
    const { route, balancer } = setup()
    const { request } = route()
    const step = request.next() as Step
    const effects = request.report(step, { sent: false, cancelled: true })
    expect(effects).toMatchObject({ failure: null, holds: null, backoff: null })
    expect(balancer.routes().every((entry) => entry.inFlight === 0)).toBe(true)
    expect(request.next()).toMatchObject({ kind: 'end', outcome: 'failed', failure: { reason: 'cancelled' } })
  })

  it('skips targets that do not fit, and says why when none did', () => {
    expect(setup({ fit: () => 'not_served' }).route().request.next()).toEqual({ kind: 'end', outcome: 'not_served' })
    expect(setup({ fit: () => 'not_allowed' }).route().request.next()).toEqual({ kind: 'end', outcome: 'not_allowed' })
    const onlyAzure = setup({ fit: (target) => (target.planned.provider === 'azure' ? 'fits' : 'not_allowed') }).route().request.next() as Step
    expect(onlyAzure.target.planned.provider).toBe('azure')
  })

  it('walks a broken stream to the targets that continue it, at most MAX_CONTINUATIONS times, never what a prefill cannot carry', () => {
    const { route } = setup({ continues: ['azure'] })
    const { request, log } = route()
    const primary = request.next() as Step
    expect(primary.continuable).toBe(true)
    // Served past its gate, then broke after content went out.
    request.report(primary, { sent: true, startedAt: 0, failure: failure('transient', 0), served: true })
    expect(request.resume(primary, false, 10)).toBe(false)
    expect(request.resume(primary, true, 10)).toBe(true)
    const continued = request.next() as Step
    expect(continued.target.planned.provider).toBe('azure')
    expect(log.lines.some((line) => line.endsWith('Continuing the broken stream on azure/gpt-4o from the 10 characters sent'))).toBe(true)
    request.report(continued, { sent: true, startedAt: 0, failure: failure('transient', 0), served: true })
    expect(request.resume(continued, true, 20)).toBe(true)
    const again = request.next() as Step
    request.report(again, { sent: true, startedAt: 0, failure: failure('transient', 0), served: true })
    expect(request.resume(again, true, 30)).toBe(false)
    // A continuation no target takes ends as not continued.
    const other = route().request
    const step = other.next() as Step
    other.report(step, { sent: true, startedAt: 0, failure: failure('transient', 0), served: true })
    other.resume(step, true, 5)
    let next = other.next()
    for (; next.kind === 'attempt'; next = other.next()) {
      expect(next.target.planned.provider).toBe('azure')
      other.report(next, { sent: true, startedAt: 0, failure: failure('transient', 503), served: false })
    }
    expect(next).toEqual({ kind: 'end', outcome: 'not_continued' })
  })
})
