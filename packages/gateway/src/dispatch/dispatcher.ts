/**
 * Dispatch of one node: binds routing's plan for a request to this node's providers, and carries
 * out what routing returns for each attempt (metrics, the node log, holds, backoffs and trial
 * rounds to share). It decides nothing: two calls to routing an attempt, `next` and `report`.
 */
import type { Logger } from 'pino'
import type { ProviderKey } from '@switchboard/providers'
import {
  createRouter, type AdaptiveBalancer, type AttemptEffects, type AttemptReport, type AttemptStep, type DeadlineSettings, type HoldEntry, type HoldNews,
  type Holds, type LoadBalancerSettings, type PlannedTarget, type RateLimitBackoff, type RateLimitBackoffs, type RequestPlan, type RequestRoute,
  type RouteEnd, type RouteTarget, type RoutingLog, type SessionAffinity, type TargetFilter, type TrialEntry
} from '@switchboard/routing'
import { GatewayError } from '../errors.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { RequestTrace } from '../observability/tracing/request-trace.ts'
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
  /** A worker's: asks the node for a session `sessions` does not know (workers/sharing.ts); null when it knows it. */
  learnSession?: (sessionId: string, model: string, now: number) => Promise<void> | null
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
  /** The request's trace, while tracing is on (observability/tracing): the engine opens a span per attempt under it. */
  trace?: RequestTrace
}

/** What routing needs of a request: the model as the caller named it and its fallbacks (`provider/model`). */
export interface RoutedRequest {
  model: string
  fallbacks: readonly string[]
}

/** One planned target bound to the provider runtime that sends it: routing's RouteTarget. */
export interface DispatchTarget extends RouteTarget<ProviderKey> {
  planned: PlannedTarget
  provider: ProviderRuntime
  model: string
  /** The caller's own key, when the plan puts it on this target. */
  directKey?: ProviderKey
}

/** One attempt of a request, as routing planned it. */
export type DispatchStep = AttemptStep<DispatchTarget, ProviderKey>
/** How a request ended without an answer. */
export type DispatchEnd = RouteEnd<DispatchTarget, ProviderKey>

/** The plan of one request with its targets bound to this node's providers. */
export interface Dispatch {
  /** Shared with other requests when the plan's targets are: read only. */
  targets: readonly DispatchTarget[]
  context: RequestContext
  /** The next attempt, or how the request ended (routing's; the dispatcher carries out what it returns). */
  next(): DispatchStep | DispatchEnd
  /** How an attempt went; what routing made of it (its failure as routing classes it). */
  report(step: DispatchStep, report: AttemptReport): AttemptEffects
  /** A stream `step` served broke after content went out: true when `next()` now walks the targets that may continue it. */
  resume(step: DispatchStep, continuable: boolean, sentChars: number): boolean
}

/** The dispatch of one node. */
export interface Dispatcher {
  /** Before `plan`: null, or a promise while a worker asks the node for a session it does not know (issue 38). */
  learn(request: RoutedRequest, context: RequestContext): Promise<void> | null
  /** Plans a request (`filter`: which targets may take it); a GatewayError naming what to fix when no provider can serve it. */
  plan(request: RoutedRequest, context: RequestContext, streams: boolean, filter: TargetFilter<DispatchTarget>): Dispatch
  /** Records and applies hold entries changed outside a request (a key or provider deleted). */
  settle(changed: readonly HoldEntry[]): void
  /** Holds released here (an operator release, a key edit): their routes go to recovering, and the change is settled. */
  released(entries: readonly HoldEntry[]): void
  /** Entries came from elsewhere (a peer, Postgres) and changed this node's set: their routes fail or recover. */
  merged(entries: readonly HoldEntry[]): void
  /** Backs a key off until its window resets (our own headers, or a signal from the region). */
  backOff(backoff: RateLimitBackoff): void
  /** Routing's 5 s cycle (routing's `recompute`); the trial rounds it changed go to the fleet. */
  recompute(): void
  /** Rounds from peers (already checked): routing applies them; this node's newer rounds go back out. */
  mergeTrials(entries: readonly TrialEntry[]): void
}

const DIRECT_KEY_NAME = 'caller key (x-bf-direct-key)'

/** Creates the dispatch of one node. */
export function createDispatcher(components: DispatcherComponents): Dispatcher {
  const { balancer, holds, sessions, backoffs, metrics, logger, now, settings, random } = components

  const bound = new WeakMap<readonly PlannedTarget[], { registry: ProviderRegistry; targets: DispatchTarget[] }>()
  const router = createRouter({
    balancer, holds, sessions, backoffs, now, settings, random,
    keysFor: (provider, model) => components.registry().get(provider)?.keysFor(model),
    keyName: (provider, keyId) => components.registry().get(provider)?.config.keys.find((key) => key.id === keyId)?.name ?? keyId,
  })

  const shareTrials = (entries: readonly TrialEntry[]) => {
    if (entries.length > 0) components.onTrialsChanged?.(entries)
  }

  /** What routing's hold changes mean for the node log, the metrics and the fleet. */
  const carryHolds = (news: HoldNews) => {
    for (const change of news.changes) {
      const fields = { provider: change.provider, key: change.key, model: change.model }
      if (change.kind === 'placed') {
        metrics.holdsPlaced.inc({ provider: change.provider, reason: change.reason })
        logger.warn({ ...fields, reason: change.reason }, change.line)
      } else if (change.kind === 'renewed') {
        metrics.checks.inc({ provider: change.provider, outcome: change.outcome })
        logger.warn({ ...fields, reason: change.reason }, change.line)
      } else {
        metrics.checks.inc({ provider: change.provider, outcome: change.cause })
        logger.info(fields, change.line)
      }
    }
    if (news.changed.length > 0) components.onHoldsChanged?.(news.changed)
  }

  const settle = (changed: readonly HoldEntry[]) => carryHolds(router.settle({ changed: [...changed], events: [] }))

  /** One request's dispatch: each call is one call to routing's route, and what it returns carried out. A class: one per request, methods shared. */
  class RequestDispatch implements Dispatch {
    constructor(
      readonly targets: readonly DispatchTarget[],
      readonly context: RequestContext,
      private readonly route: RequestRoute<DispatchTarget, ProviderKey>,
    ) {}

    next(): DispatchStep | DispatchEnd {
      const step = this.route.next()
      if (step.kind === 'attempt') {
        if (step.skipped.length > 0) metrics.heldKeySkips.inc({ provider: step.target.provider.name })
        if (step.trials.length > 0) shareTrials(step.trials)
      }
      return step
    }

    report(step: DispatchStep, report: AttemptReport): AttemptEffects {
      const effects = this.route.report(step, report)
      const provider = step.target.provider.name
      if (report.sent) {
        metrics.attempts.inc({ provider, failure_class: effects.failure === null ? 'none' : effects.failure.failureClass })
        metrics.attemptLatency.observe({ provider }, (now() - report.startedAt) / 1000)
      }
      if (effects.backoff !== null) components.onRateLimited?.(effects.backoff)
      if (effects.trials.length > 0) shareTrials(effects.trials)
      if (effects.holds !== null) carryHolds(effects.holds)
      return effects
    }

    resume(step: DispatchStep, continuable: boolean, sentChars: number): boolean {
      return this.route.resume(step, continuable, sentChars)
    }
  }

  /** Binds the plan's targets to this node's providers (once per shared plan and registry). */
  const bind = (plan: RequestPlan, registry: ProviderRegistry, directKey: string | null): readonly DispatchTarget[] => {
    const known = bound.get(plan.targets)
    if (known !== undefined && known.registry === registry) return known.targets
    const targets: DispatchTarget[] = []
    for (const planned of plan.targets) {
      const provider = registry.get(planned.provider)!
      const model = planned.model
      const direct = planned.direct && directKey !== null ? { id: 'direct', name: DIRECT_KEY_NAME, value: directKey, models: ['*'], weight: 1 } : undefined
      const target: DispatchTarget = {
        planned, provider, model,
        policy: provider.policy,
        deadlines: provider.deadlines,
        continues: provider.adapter.continues?.(model) === true,
        keys: direct !== undefined ? () => [direct] : () => provider.keysFor(model),
      }
      if (direct !== undefined) target.directKey = direct
      targets.push(target)
    }
    if (Object.isFrozen(plan.targets)) bound.set(plan.targets, { registry, targets: Object.freeze(targets) as DispatchTarget[] })
    return targets
  }

  return {
    learn(request, context) {
      if (context.sessionId === null || components.learnSession === undefined) return null
      return components.learnSession(context.sessionId, parseModel(components.registry(), request.model).model, now())
    },
    plan(request, context, streams, filter) {
      const registry = components.registry()
      const { pinned, model } = parseModel(registry, request.model)
      const fallbacks = request.fallbacks.length === 0 ? NO_DIRECTIONS : request.fallbacks.map((fallback, index) => parseFallback(registry, fallback, index))
      const plan = router.plan({ model, pinnedProvider: pinned, fallbacks, sessionId: context.sessionId, directKey: context.directKey !== null, log: context.log })
      shareTrials(router.trialChanges())
      if (plan === null) {
        throw new GatewayError('model_not_served', `No configured provider has a key for model "${model}". Name it as "provider/model", or add it to a key's "models". Configured providers: ${names(registry)}.`, { param: 'model' })
      }
      const targets = bind(plan, registry, context.directKey)
      const route: RequestRoute<DispatchTarget, ProviderKey> = router.route(plan, targets, { sessionId: context.sessionId, sessionTtlMs: context.sessionTtlMs, log: context.log, deadlines: context.deadlines, streams, filter })
      return new RequestDispatch(targets, context, route)
    },

    settle,
    backOff: (backoff) => void router.backOff(backoff),
    recompute: () => shareTrials(router.recompute()),
    mergeTrials: (entries) => shareTrials(router.mergeTrials(entries)),
    released(entries) {
      router.released(entries)
      settle(entries)
    },
    merged: (entries) => router.merged(entries),
  }
}
