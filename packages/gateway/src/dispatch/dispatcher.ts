/**
 * Dispatch of one node: asks @switchboard/routing for the plan of a request (`plan`, `keyPlan`),
 * binds it to the providers this node runs, and records what each attempt did (metrics, the
 * node log, holds to gossip, rate-limit backoffs to share). It decides nothing: every rule is in
 * the routing package, and the plan it returns is data a recorder reads as is.
 */
import type { Logger } from 'pino'
import type { ProviderKey, RateLimitExhaustion, TokenUsage } from '@switchboard/providers'
import {
  holdLine,
  planKeys,
  planRequest,
  releaseLine,
  renewLine,
  type AdaptiveBalancer,
  type AttemptFailure,
  type DeadlineSettings,
  type HoldEntry,
  type Holds,
  type KeyPlan,
  type LoadBalancerSettings,
  type PlannedTarget,
  type PlannerComponents,
  type RateLimitBackoff,
  type RateLimitBackoffs,
  type RequestPlan,
  type RoutingLog,
  type SessionAffinity,
  type Settlement,
  type TrialEntry,
} from '@switchboard/routing'
import { GatewayError } from '../errors.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { ProviderRegistry, ProviderRuntime } from '../inference/registry.ts'
import { names, NO_DIRECTIONS, parseFallback, parseModel } from './request-targets.ts'

export interface DispatcherComponents {
  balancer: AdaptiveBalancer
  holds: Holds
  sessions: SessionAffinity
  backoffs: RateLimitBackoffs
  metrics: Metrics
  logger: Logger
  registry: () => ProviderRegistry
  settings: () => LoadBalancerSettings
  now: () => number
  random: () => number
  /** Hold entries this node changed, for the fleet to share. */
  onHoldsChanged?: (entries: readonly HoldEntry[]) => void
  /** A key's rate-limit window ran out here: the region's nodes back it off too. */
  onRateLimited?: (backoff: RateLimitBackoff) => void
  /** Trial rounds this node changed (a failed route's round opened, a claim, a trial's answer), for the fleet to share. */
  onTrialsChanged?: (entries: readonly TrialEntry[]) => void
}

/** What a request brings besides its body, whatever surface it came in on. */
export interface RequestContext {
  /** The request's id (`x-request-id`, `extra_fields.request_id`). */
  requestId: string
  sessionId: string | null
  /** The session's own idle limit (`x-bf-session-ttl`), when it set one. */
  sessionTtlMs?: number
  directKey: string | null
  log: RoutingLog
  /** The caller's gateway key may use these providers only (issue 13): the engine skips any other target. */
  allowedProviders?: ReadonlySet<string>
  /** Deadlines the request set by header (`x-bf-request-timeout`, `x-bf-first-token-timeout`, `x-bf-stream-idle-timeout`). */
  deadlines?: DeadlineSettings
}

/** What routing needs of a request: the model as the caller named it and its fallbacks (`provider/model`). */
export interface RoutedRequest {
  model: string
  fallbacks: readonly string[]
}

/** One planned target bound to the provider runtime that sends it. */
export interface DispatchTarget {
  planned: PlannedTarget
  provider: ProviderRuntime
  model: string
  /** The caller's own key, when the plan puts it on this target. */
  directKey?: ProviderKey
}

/** The plan of one request with its targets bound to this node's providers. */
export interface Dispatch {
  plan: RequestPlan
  /** Shared with other requests when the plan's targets are: read only. */
  targets: readonly DispatchTarget[]
  context: RequestContext
}

/** The keys of one target's attempts and what routing planned for them. */
export interface KeyDispatch {
  keys: readonly ProviderKey[]
  plan: KeyPlan
}

/** The dispatch of one node. */
export interface Dispatcher {
  /** Plans a request; throws a GatewayError naming what to fix when no provider can serve it. */
  plan(request: RoutedRequest, context: RequestContext): Dispatch
  keyPlan(target: DispatchTarget, log: RoutingLog): KeyDispatch
  attemptStarted(target: DispatchTarget, key: ProviderKey): void
  /**
   * An attempt ended: its failure (null when served), and from a success the adapter's reading
   * of the key's rate-limit window and the answer's token counts.
   */
  attemptFinished(target: DispatchTarget, key: ProviderKey, startedAt: number, failure: AttemptFailure | null, log: RoutingLog, rateLimit?: RateLimitExhaustion | null, usage?: TokenUsage | null): void
  /** An attempt started but never sent (a body the provider cannot be sent): in-flight only is undone. */
  attemptAbandoned(target: DispatchTarget, key: ProviderKey): void
  served(dispatch: Dispatch, target: DispatchTarget, key: ProviderKey): void
  /** Records and applies a settlement made outside a request (an operator clear, a key edit). */
  settle(settlement: Settlement, log?: RoutingLog, requestModel?: string): void
  /** Sends the routes of released holds to recovering (an operator release, a key edit, a peer's release). */
  released(entries: readonly HoldEntry[]): void
  /** Entries came from elsewhere (a peer, Postgres) and changed this node's set: their routes fail or recover. */
  merged(entries: readonly HoldEntry[]): void
  /** Backs a key off until its window resets (our own headers, or a signal from the region). */
  backOff(backoff: RateLimitBackoff): void
  /** Drops expired backoffs; true when any expired (selection tables must be rebuilt). */
  expireBackoffs(): boolean
  /** Rounds from peers (already checked): routing applies them; this node's newer rounds go back out. */
  mergeTrials(entries: readonly TrialEntry[]): void
  /** Hands the trial rounds routing changed since the last call to the fleet (after a recompute). */
  flushTrials(): void
}

const DIRECT_KEY_NAME = 'caller key (x-bf-direct-key)'

/** Creates the dispatch of one node. */
export function createDispatcher(components: DispatcherComponents): Dispatcher {
  const { balancer, holds, sessions, backoffs, metrics, logger, now } = components

  const bound = new WeakMap<readonly PlannedTarget[], { registry: ProviderRegistry; targets: DispatchTarget[] }>()
  const planner: PlannerComponents = {
    balancer,
    holds,
    sessions,
    backoffs,
    keysFor: (provider, model) => components.registry().get(provider)?.keysFor(model),
  }

  /** Whatever routing changed in the trial rounds while planning or recording goes to the fleet: routing decides, this carries. */
  const flushTrials = () => {
    const changes = balancer.trials.changes()
    if (changes.length > 0) components.onTrialsChanged?.(changes)
  }

  const backOff = (backoff: RateLimitBackoff) => {
    if (backoffs.add(backoff)) balancer.holdsChanged()
  }

  const keyName = (provider: string, keyId: string) => components.registry().get(provider)?.config.keys.find((key) => key.id === keyId)?.name ?? keyId

  /** The routes a hold covers: the held model, or every model of a whole-key hold. */
  const routesOf = (entry: HoldEntry) => {
    if (entry.model !== null) return [{ provider: entry.provider, model: entry.model, keyId: entry.keyId }]
    return balancer.routes().filter((route) => route.provider === entry.provider && route.keyId === entry.keyId)
  }

  const releaseAll = (entries: readonly HoldEntry[]) => {
    const at = now()
    for (const entry of entries) if (entry.state === 'released') for (const route of routesOf(entry)) balancer.releaseRoute(route, at)
  }

  const settle = (settlement: Settlement, log?: RoutingLog, requestModel?: string) => {
    const at = now()
    for (const event of settlement.events) {
      const entry = event.entry
      const model = requestModel ?? entry.model ?? 'every model'
      const route = { provider: entry.provider, model, key: keyName(entry.provider, entry.keyId) }
      let line: string
      if (event.kind === 'placed') {
        const held = holds.holdsOn(entry.provider, entry.keyId, entry.model ?? '').find((candidate) => candidate.entry.model === entry.model)
        const waitMs = held ? held.dueAt - entry.waitStartedAt : entry.baseWaitMs
        line = holdLine({ ...route, reason: entry.reason, wholeKey: entry.model === null, waitMs, askedWaitMs: event.askedWaitMs })
        // A held key's routes read failed at once: every model of a whole-key hold.
        for (const covered of routesOf(entry)) balancer.failRoute(covered, at)
        if (entry.model === null && requestModel !== undefined) balancer.failRoute({ provider: entry.provider, model: requestModel, keyId: entry.keyId }, at)
        metrics.holdsPlaced.inc({ provider: entry.provider, reason: entry.reason })
        logger.warn({ provider: entry.provider, key: route.key, model: entry.model, reason: entry.reason }, line)
      } else if (event.kind === 'renewed') {
        line = renewLine({ ...route, reason: entry.reason, waitMs: entry.baseWaitMs, refusedAgain: event.outcome === 'refused_again' })
        metrics.checks.inc({ provider: entry.provider, outcome: event.outcome })
        logger.warn({ provider: entry.provider, key: route.key, model: entry.model, reason: entry.reason }, line)
      } else {
        line = releaseLine({ ...route, cause: event.cause })
        metrics.checks.inc({ provider: entry.provider, outcome: event.cause })
        for (const covered of routesOf(entry)) balancer.releaseRoute(covered, at)
        logger.info({ provider: entry.provider, key: route.key, model: entry.model }, line)
      }
      log?.add(line)
    }
    if (settlement.changed.length > 0) {
      balancer.holdsChanged()
      components.onHoldsChanged?.(settlement.changed)
    }
  }

  return {
    plan(request, context) {
      const registry = components.registry()
      const { pinned, model } = parseModel(registry, request.model)
      const fallbacks = request.fallbacks.length === 0 ? NO_DIRECTIONS : request.fallbacks.map((fallback, index) => parseFallback(registry, fallback, index))
      const plan = planRequest(planner, {
        model,
        pinnedProvider: pinned,
        fallbacks,
        sessionId: context.sessionId,
        directKey: context.directKey !== null,
        settings: components.settings(),
        now: now(),
        random: components.random,
        log: context.log,
      })
      flushTrials()
      if (plan === null) {
        throw new GatewayError('model_not_served', `No configured provider has a key for model "${model}". Name it as "provider/model", or add it to a key's "models". Configured providers: ${names(registry)}.`, { param: 'model' })
      }
      // Targets planned once per selection table are bound once per table and registry too.
      const known = bound.get(plan.targets)
      if (known !== undefined && known.registry === registry) return { plan, targets: known.targets, context }
      const targets: DispatchTarget[] = []
      for (const planned of plan.targets) {
        const provider = registry.get(planned.provider)!
        const target: DispatchTarget = { planned, provider, model: planned.model }
        if (planned.direct && context.directKey !== null) target.directKey = { id: 'direct', name: DIRECT_KEY_NAME, value: context.directKey, models: ['*'], weight: 1 }
        targets.push(target)
      }
      if (Object.isFrozen(plan.targets)) bound.set(plan.targets, { registry, targets: Object.freeze(targets) as DispatchTarget[] })
      return { plan, targets, context }
    },

    keyPlan(target, log) {
      if (target.directKey) return { keys: [target.directKey], plan: DIRECT_KEY_PLAN }
      const keys = target.provider.keysFor(target.model)
      const plan = planKeys(planner, target.planned, keys, { settings: components.settings(), now: now(), log })
      flushTrials()
      if (plan.leftOut.length > 0) metrics.heldKeySkips.inc({ provider: target.provider.name })
      return { keys, plan }
    },

    attemptStarted(target, key) {
      if (target.directKey) return
      balancer.attemptStarted({ provider: target.provider.name, model: target.model, keyId: key.id }, now())
    },

    attemptAbandoned(target, key) {
      if (target.directKey) return
      balancer.attemptAbandoned({ provider: target.provider.name, model: target.model, keyId: key.id }, now())
      flushTrials()
    },

    attemptFinished(target, key, startedAt, failure, log, rateLimit, usage) {
      const at = now()
      const provider = target.provider.name
      metrics.attempts.inc({ provider, failure_class: failure === null ? 'none' : failure.failureClass })
      metrics.attemptLatency.observe({ provider }, (at - startedAt) / 1000)
      if (target.directKey) return
      if (failure === null && rateLimit != null) {
        const exhausted = rateLimit
        if (exhausted.untilMs > at && !backoffs.isBackedOff(provider, key.id, target.model, at)) {
          const backoff = { provider, keyId: key.id, model: target.model, untilMs: exhausted.untilMs }
          backOff(backoff)
          log.add(`Backing key ${key.name} off ${provider}/${target.model} until its ${exhausted.window} window resets in ${Math.ceil((exhausted.untilMs - at) / 1000)}s (${exhausted.remaining} left)`)
          components.onRateLimited?.(backoff)
        }
      }
      balancer.attemptFinished({
        provider,
        model: target.model,
        keyId: key.id,
        failureClass: failure === null ? null : failure.failureClass,
        latencyMs: at - startedAt,
        promptTokens: usage?.promptTokens,
        completionTokens: usage?.completionTokens,
        now: at,
      })
      flushTrials()
      settle(holds.recordAnswer({ provider, keyId: key.id, model: target.model, startedAt, now: at, failure }), log, target.model)
    },

    served(dispatch, target, key) {
      if (dispatch.context.sessionId === null || target.directKey) return
      sessions.remember(dispatch.context.sessionId, target.model, { provider: target.provider.name, keyId: key.id }, now(), dispatch.context.sessionTtlMs)
    },

    settle,
    backOff,
    expireBackoffs: () => backoffs.expire(now()),
    mergeTrials(entries) {
      const newer = balancer.mergeTrials(entries, now())
      // A peer behind (restarted, or back from a partition) hears the newer rounds; our own pending changes go with them.
      const changes = balancer.trials.changes()
      const out = changes.length === 0 ? newer : [...newer.filter((entry) => !changes.includes(entry)), ...changes]
      if (out.length > 0) components.onTrialsChanged?.(out)
    },
    flushTrials,
    released: releaseAll,
    merged(entries) {
      if (entries.length === 0) return
      // A hold learned from a peer or Postgres fails its routes here too, so its release sends them to recovering.
      const at = now()
      for (const entry of entries) if (entry.state === 'held') for (const route of routesOf(entry)) balancer.failRoute(route, at)
      releaseAll(entries)
      balancer.holdsChanged()
    },
  }
}

const DIRECT_KEY_PLAN: KeyPlan = Object.freeze({ weights: Object.freeze([1]), leftOut: Object.freeze([]), first: 0, check: -1, everyKeyHeld: false })
