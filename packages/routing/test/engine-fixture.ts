/**
 * Tests of key choice run the engine requests use: the real balancer, hold set, backoffs and
 * session table, `planKeys` and `keyRotationFor(...).first()`, exactly as the gateway's engine
 * calls them (and bench/data-plane/selection.ts times them). Not part of the package's API.
 */
import { createAdaptiveBalancer, type AdaptiveBalancer } from '../src/adaptive/balancer.ts'
import { createSessionAffinity } from '../src/adaptive/session.ts'
import { defaultLoadBalancerSettings, keyServesModel, type BalancerKey, type BalancerProvider, type RouteRef, type RouteState } from '../src/adaptive/types.ts'
import { createHolds, type Holds } from '../src/holds/holds.ts'
import { RateLimitBackoffs } from '../src/planning/backoffs.ts'
import { keyRotationFor, planKeys } from '../src/planning/key-plan.ts'
import { RoutingLog } from '../src/planning/log.ts'
import type { KeyPlan, PlannedTarget, PlannerComponents } from '../src/planning/types.ts'

/** The retry policy of the engine's draws here: the first draw does not depend on it. */
const POLICY = { maxRetries: 2, backoffInitialMs: 100, backoffMaxMs: 1_000 }

/** What `firstKey` may bring besides the route. */
export interface FirstKeyOptions {
  /** `route_selection_enabled`; default on. */
  routeSelectionEnabled?: boolean
  /** The session's key: planned first when it is still offered. */
  sessionKeyId?: string
  now?: number
  /** The target as request planning planned it (a check's or a trial's key first), instead of a plain one. */
  planned?: PlannedTarget
}

/** The key of an engine's first attempt, and the plan it came from. */
export interface FirstKey {
  key: BalancerKey
  plan: KeyPlan
  why: 'first' | 'retry' | 'rotate'
}

export interface KeyEngine {
  balancer: AdaptiveBalancer
  holds: Holds
  backoffs: RateLimitBackoffs
  planner: PlannerComponents
  /** Holds a key on every model, as a rejected credential does, and tells the balancer (as dispatch does). */
  holdKey(provider: string, keyId: string, now?: number): void
  /** The key the engine's first attempt on `provider` for `model` uses; null when no key serves it. */
  firstKey(provider: string, model: string, random: () => number, options?: FirstKeyOptions): FirstKey | null
}

/** A key engine over `providers`, with nothing held. */
export function keyEngine(providers: readonly BalancerProvider[]): KeyEngine {
  let clock = 0
  const holds = createHolds({ nodeId: 'test', random: () => 0.5 })
  const backoffs = new RateLimitBackoffs()
  const balancer = createAdaptiveBalancer({ providers, isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) || backoffs.isBackedOff(provider, keyId, model, clock) })
  const keysFor = (provider: string, model: string): readonly BalancerKey[] | undefined => providers.find((entry) => entry.provider === provider)?.keys.filter((key) => keyServesModel(key, model))
  const planner: PlannerComponents = { balancer, holds, sessions: createSessionAffinity({ capacity: 1_000, idleMs: 3_600_000 }), backoffs, keysFor }
  return {
    balancer,
    holds,
    backoffs,
    planner,
    holdKey(provider, keyId, now = 0) {
      holds.recordAnswer({ provider, keyId, model: 'any', startedAt: now, now, check: false, failure: { failureClass: 'credential', scope: 'key', status: 401, waitHintMs: null, message: 'refused', code: null } })
      balancer.holdsChanged()
    },
    firstKey(provider, model, random, options = {}) {
      clock = options.now ?? clock
      const keys = keysFor(provider, model) ?? []
      const target: PlannedTarget = options.planned ?? { provider, model, source: 'primary', direct: false, firstKeyId: options.sessionKeyId, firstIsCheck: false }
      const settings = options.routeSelectionEnabled === false ? { ...defaultLoadBalancerSettings, route_selection_enabled: false } : defaultLoadBalancerSettings
      const plan = planKeys(planner, target, keys, { settings, now: clock, log: RoutingLog.off })
      const step = keyRotationFor(plan, POLICY, random).first()
      return step.kind === 'attempt' ? { key: keys[step.keyIndex]!, plan, why: step.why } : null
    },
  }
}

/** The share of each key in the engine's weighted draw for `plan`: its weight over the weights of the keys not left out (uniform when all are 0). */
export function drawShares(plan: KeyPlan): number[] {
  const eligible = plan.weights.map((_, index) => !plan.leftOut.some((left) => left.index === index))
  let total = 0
  let count = 0
  plan.weights.forEach((weight, index) => {
    if (!eligible[index]) return
    count++
    total += Math.max(0, weight)
  })
  return plan.weights.map((weight, index) => (!eligible[index] ? 0 : total > 0 ? Math.max(0, weight) / total : 1 / count))
}

/** A route's state as the routes API shows it (held reads failed); undefined for a route the balancer does not list. */
export function routeState(balancer: AdaptiveBalancer, route: RouteRef): RouteState | undefined {
  return balancer.routes().find((known) => known.provider === route.provider && known.model === route.model && known.keyId === route.keyId)?.state
}
