/**
 * Routing of one node: the adaptive balancer (issue 4) and the held keys (issue 5) put in
 * front of the request path. The engine asks it which providers to try (`plan`), which key
 * each attempt may use (`keyPlan`), and tells it how each attempt ended (`attemptFinished`).
 * Strategy lives in @switchboard/routing; this file only composes it with the providers
 * this node runs.
 */
import type { Logger } from 'pino'
import { readRateLimitExhaustion, type ProviderKey, type TokenUsage } from '@switchboard/providers'
import {
  applySessionAffinity,
  checkLine,
  directionLog,
  everyKeyHeldLine,
  holdLine,
  keyLog,
  providerCheckLine,
  releaseLine,
  renewLine,
  skipLine,
  type AdaptiveBalancer,
  type AttemptFailure,
  type Direction,
  type RotationWeights,
  withDirections,
  type HoldEntry,
  type Holds,
  type LoadBalancerSettings,
  type SessionAffinity,
  type Settlement,
} from '@switchboard/routing'
import { GatewayError } from '../errors.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { ProviderRegistry, ProviderRuntime } from '../inference/registry.ts'
import type { ChatRequest } from '../inference/validate.ts'
import { RoutingLog } from './log.ts'
import { names, NO_DIRECTIONS, parseFallback, parseModel, preferNamingProviders } from './request-targets.ts'

export interface RouterComponents {
  balancer: AdaptiveBalancer
  holds: Holds
  sessions: SessionAffinity
  metrics: Metrics
  logger: Logger
  registry: () => ProviderRegistry
  settings: () => LoadBalancerSettings
  now: () => number
  random: () => number
  /** Hold entries this node changed, for the fleet to share. */
  onHoldsChanged?: (entries: readonly HoldEntry[]) => void
  /** A key's rate-limit window ran out here: the region's nodes back it off too. */
  onRateLimited?: (signal: RateLimitSignal) => void
}

/** A key to leave alone until its provider's rate-limit window resets (shared within a region). */
export interface RateLimitSignal {
  provider: string
  keyId: string
  model: string
  untilMs: number
}

/** One provider + model to try, with its own retry budget. */
export interface PlannedTarget {
  provider: ProviderRuntime
  model: string
  /** The caller's own key (`x-bf-direct-key`): the first target only, never a fallback. */
  directKey?: ProviderKey
  /** A key to try first: this node's check of a held key, or the session's key. */
  firstKeyId?: string
}

/** What a request brings besides its body. */
export interface RequestContext {
  /** The request's id (`x-request-id`, `extra_fields.request_id`). */
  requestId: string
  sessionId: string | null
  /** The session's own idle limit (`x-bf-session-ttl`), when it set one. */
  sessionTtlMs?: number
  directKey: string | null
  log: RoutingLog
}

/** The providers to try for a request, in order. */
export interface RequestPlan {
  targets: PlannedTarget[]
  context: RequestContext
}

/** The keys an attempt on a target may use. */
export interface KeyPlan {
  keys: readonly ProviderKey[]
  /** Shared with other requests: read only. */
  weights: readonly number[]
  /** Held keys this request must skip. */
  unavailable: readonly number[]
  first?: number
}

/** The routing of one node. */
export interface Router {
  plan(request: ChatRequest, context: RequestContext): RequestPlan
  keyPlan(target: PlannedTarget, log: RoutingLog): KeyPlan
  attemptStarted(target: PlannedTarget, key: ProviderKey): void
  attemptFinished(target: PlannedTarget, key: ProviderKey, startedAt: number, failure: AttemptFailure | null, log: RoutingLog, headers?: Record<string, string>, usage?: TokenUsage | null): void
  served(plan: RequestPlan, target: PlannedTarget, key: ProviderKey): void
  /** Applies a settlement made outside a request (a merge from a peer needs none; an operator clear does). */
  settle(settlement: Settlement, log?: RoutingLog, requestModel?: string): void
  /** Sends the routes of released holds to recovering (an operator release, a key edit, a peer's release). */
  released(entries: readonly HoldEntry[]): void
  /** Entries came from elsewhere (a peer, Postgres): selection tables must re-read the holds. */
  merged(entries: readonly HoldEntry[]): void
  /** Backs a key off until its window resets (our own headers, or a signal from the region). */
  backOff(signal: RateLimitSignal): void
  /** True while a rate-limit backoff keeps the key out for the model. */
  isBackedOff(provider: string, keyId: string, model: string): boolean
  /** Drops expired backoffs; true when any expired (selection tables must be rebuilt). */
  expireBackoffs(): boolean
}

/** Creates the router of one node. */
export function createRouter(components: RouterComponents): Router {
  const { balancer, holds, sessions, metrics, logger, now } = components

  /** Rate-limit backoffs by provider, key and model: until when (epoch ms). */
  const backoffs = new Map<string, number>()
  const backoffKey = (provider: string, keyId: string, model: string) => `${provider}\u0000${keyId}\u0000${model}`
  const isBackedOff = (provider: string, keyId: string, model: string) => {
    if (backoffs.size === 0) return false
    const until = backoffs.get(backoffKey(provider, keyId, model))
    return until !== undefined && until > now()
  }

  const backOff = (signal: RateLimitSignal) => {
    const id = backoffKey(signal.provider, signal.keyId, signal.model)
    if ((backoffs.get(id) ?? 0) >= signal.untilMs) return
    backoffs.set(id, signal.untilMs)
    balancer.holdsChanged()
  }

  const keyName = (provider: string, keyId: string) => components.registry().get(provider)?.config.keys.find((key) => key.id === keyId)?.name ?? keyId

  /** A released hold sends its routes to recovering: the held model, or every model of a whole-key hold. */
  const releaseRoutes = (entry: HoldEntry, at: number) => {
    if (entry.model !== null) return balancer.releaseRoute({ provider: entry.provider, model: entry.model, keyId: entry.keyId }, at)
    for (const route of balancer.routes()) {
      if (route.provider === entry.provider && route.keyId === entry.keyId) balancer.releaseRoute(route, at)
    }
  }

  const releaseAll = (entries: readonly HoldEntry[]) => {
    const at = now()
    for (const entry of entries) if (entry.state === 'released') releaseRoutes(entry, at)
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
        metrics.holdsPlaced.inc({ provider: entry.provider, reason: entry.reason })
        logger.warn({ provider: entry.provider, key: route.key, model: entry.model, reason: entry.reason }, line)
      } else if (event.kind === 'renewed') {
        line = renewLine({ ...route, reason: entry.reason, waitMs: entry.baseWaitMs, refusedAgain: event.outcome === 'refused_again' })
        metrics.checks.inc({ provider: entry.provider, outcome: event.outcome })
        logger.warn({ provider: entry.provider, key: route.key, model: entry.model, reason: entry.reason }, line)
      } else {
        line = releaseLine({ ...route, cause: event.cause })
        metrics.checks.inc({ provider: entry.provider, outcome: event.cause })
        releaseRoutes(entry, at)
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
      const settings = components.settings()
      const { pinned, model } = parseModel(registry, request.model)
      const configured = request.fallbacks.length === 0 ? NO_DIRECTIONS : request.fallbacks.map((fallback, index) => parseFallback(registry, fallback, index))
      let decision = balancer.selectDirection(model, { pinnedProvider: pinned, configuredFallbacks: configured, settings, random: components.random })
      if (decision.primary === null) {
        if (pinned !== undefined) decision = withDirections(decision, { provider: pinned, model }, decision.fallbacks, 'pinned')
        else throw new GatewayError('model_not_served', `No configured provider has a key for model "${model}". Name it as "provider/model", or add it to a key's "models". Configured providers: ${names(registry)}.`, { param: 'model' })
      }
      let directions: Direction[] = [decision.primary!]
      for (const fallback of decision.fallbacks) directions.push(fallback)
      if (pinned === undefined) directions = preferNamingProviders(registry, directions, configured)
      context.log.decision = decision
      if (context.log.enabled) context.log.addEntries(directionLog(decision))

      // A provider held on every key whose key is due gets this request first, healthy ones behind it.
      let firstKeyId: string | undefined
      const rerouted = decision.reason === 'pinned_rerouted' && decision.pinned !== null
      if ((decision.skipped.length > 0 || rerouted) && (pinned === undefined || settings.reroute_failed_directions)) {
        const at = now()
        const candidates = rerouted ? [...decision.skipped, decision.pinned!] : decision.skipped
        for (const candidate of candidates) {
          const keys = registry.get(candidate.provider)?.keysFor(candidate.model) ?? []
          const coverage = holds.coverage(candidate.provider, candidate.model, keys.map((key) => key.id), at)
          const due = coverage.allHeld ? coverage.dueKeyIds.find((keyId) => holds.claimCheck(candidate.provider, keyId, candidate.model, at)) : undefined
          if (due === undefined) continue
          firstKeyId = due
          context.log.check = { provider: candidate.provider, model: candidate.model, keyId: due }
          directions = [candidate, ...directions.filter((direction) => direction.provider !== candidate.provider || direction.model !== candidate.model)]
          context.log.add(providerCheckLine({ provider: candidate.provider, model: candidate.model, key: keyName(candidate.provider, due) }))
          break
        }
      }

      // Session affinity: keep the session on its provider and key while they are offered.
      let preferKeyId: string | undefined
      if (context.sessionId !== null && firstKeyId === undefined) {
        const last = sessions.recall(context.sessionId, model, now())
        const affinity = applySessionAffinity(withDirections(decision, directions[0]!, directions.slice(1)), last, (route) => balancer.isRouteOffered(route))
        if (affinity.outcome === 'kept') directions = [affinity.decision.primary!, ...affinity.decision.fallbacks]
        preferKeyId = affinity.preferKeyId
        context.log.session = affinity.outcome
        if (affinity.outcome !== 'none') context.log.addEntries(directionLog(affinity.decision, affinity.outcome).filter((entry) => entry.kind === 'session'))
      }

      const targets: PlannedTarget[] = []
      for (const direction of directions) {
        const provider = registry.get(direction.provider)
        if (provider) targets.push({ provider, model: direction.model })
      }
      const first = targets[0]
      if (first) {
        if (firstKeyId !== undefined) first.firstKeyId = firstKeyId
        else if (preferKeyId !== undefined) first.firstKeyId = preferKeyId
        if (context.directKey !== null) first.directKey = { id: 'direct', name: 'caller key (x-bf-direct-key)', value: context.directKey, models: ['*'], weight: 1 }
      }
      return { targets, context }
    },

    keyPlan(target, log) {
      if (target.directKey) return { keys: [target.directKey], weights: [1], unavailable: NO_INDEXES }
      const provider = target.provider.name
      const model = target.model
      const keys = target.provider.keysFor(model)
      const settings = components.settings()
      const weights = alignWeights(keys, balancer.rotationWeights(provider, model, settings.route_selection_enabled))
      let held: number[] | null = null
      let first = target.firstKeyId === undefined ? -1 : keys.findIndex((key) => key.id === target.firstKeyId)
      const at = now()
      for (let index = 0; index < keys.length; index++) {
        const key = keys[index]!
        if (isBackedOff(provider, key.id, model) && first !== index) {
          ;(held ??= []).push(index)
          if (log.recording) skipped(log, provider, model, key, 'rate_limit_window')
          continue
        }
        if (!holds.isHeld(provider, key.id, model)) continue
        if (first === index) continue
        if (first < 0 && holds.claimCheck(provider, key.id, model, at)) {
          first = index
          log.check = { provider, model, keyId: key.id }
          log.add(checkLine({ provider, model, key: key.name }))
          continue
        }
        ;(held ??= []).push(index)
        if (log.recording) skipped(log, provider, model, key, holds.holdsOn(provider, key.id, model)[0]?.entry.reason ?? 'held')
      }
      if (held !== null) {
        metrics.heldKeySkips.inc({ provider })
        if (held.length === keys.length) {
          // Every key is held and none is due: the request goes anyway, and its answer counts as a check.
          log.add(everyKeyHeldLine({ provider, model, key: 'one of them' }))
          // Nothing is left out after all: the request goes to one of them.
          if (log.skipped !== null) log.skipped = log.skipped.filter((key) => key.provider !== provider || key.model !== model)
          log.check ??= { provider, model, keyId: null }
          return { keys, weights, unavailable: NO_INDEXES }
        }
        log.add(skipLine({ provider, model, skipped: held.length, total: keys.length }))
      }
      if (log.enabled) {
        const decision = balancer.selectKey(provider, model, () => 0.5, { routeSelectionEnabled: settings.route_selection_enabled })
        log.addEntries(keyLog({ provider, model }, decision).filter((entry) => entry.kind === 'key_skipped' && entry.reason !== 'held'))
      }
      const unavailable = held ?? NO_INDEXES
      return first >= 0 ? { keys, weights, unavailable, first } : { keys, weights, unavailable }
    },

    attemptStarted(target, key) {
      if (target.directKey) return
      balancer.attemptStarted({ provider: target.provider.name, model: target.model, keyId: key.id }, now())
    },

    attemptFinished(target, key, startedAt, failure, log, headers, usage) {
      const at = now()
      const provider = target.provider.name
      metrics.attempts.inc({ provider, failure_class: failure === null ? 'none' : failure.failureClass })
      metrics.attemptLatency.observe({ provider }, (at - startedAt) / 1000)
      if (target.directKey) return
      if (failure === null && headers !== undefined) {
        const exhausted = readRateLimitExhaustion(headers, at)
        if (exhausted !== null && !isBackedOff(provider, key.id, target.model)) {
          const signal = { provider, keyId: key.id, model: target.model, untilMs: exhausted.untilMs }
          backOff(signal)
          log.add(`Backing key ${key.name} off ${provider}/${target.model} until its ${exhausted.window} window resets in ${Math.ceil((exhausted.untilMs - at) / 1000)}s (${exhausted.remaining} left)`)
          components.onRateLimited?.(signal)
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
      settle(holds.recordAnswer({ provider, keyId: key.id, model: target.model, startedAt, now: at, failure }), log, target.model)
    },

    served(plan, target, key) {
      if (plan.context.sessionId === null || target.directKey) return
      sessions.remember(plan.context.sessionId, target.model, { provider: target.provider.name, keyId: key.id }, now(), plan.context.sessionTtlMs)
    },

    settle,
    backOff,
    isBackedOff,
    expireBackoffs() {
      const at = now()
      let expired = false
      for (const [id, until] of backoffs) {
        if (until <= at) {
          backoffs.delete(id)
          expired = true
        }
      }
      return expired
    },
    released: releaseAll,
    merged(entries) {
      if (entries.length === 0) return
      releaseAll(entries)
      balancer.holdsChanged()
    },
  }
}

const NO_INDEXES: readonly number[] = Object.freeze([])

/** Notes a key left out of the request's picks, for the request log. */
function skipped(log: RoutingLog, provider: string, model: string, key: ProviderKey, reason: string): void {
  ;(log.skipped ??= []).push({ provider, model, keyId: key.id, keyName: key.name, reason })
}

/**
 * The rotation weights of `keys`: the balancer's shared array when it lists the same keys in
 * the same order (the usual case: both keep configured order), else looked up by key id, with
 * the configured weight for a key the balancer does not know yet.
 */
function alignWeights(keys: readonly ProviderKey[], table: RotationWeights | undefined): readonly number[] {
  if (table !== undefined && table.keyIds.length === keys.length) {
    let same = true
    for (let index = 0; index < keys.length; index++) {
      if (table.keyIds[index] !== keys[index]!.id) {
        same = false
        break
      }
    }
    if (same) return table.weights
  }
  return keys.map((key) => {
    const index = table === undefined ? -1 : table.keyIds.indexOf(key.id)
    return index < 0 ? key.weight : table!.weights[index]!
  })
}
