/**
 * The router of one node (issue 35, item 2): the plan of a request, the next attempt, and what each
 * outcome means. The gateway asks `next()` for an attempt and tells `report()` how it went; every
 * routing decision happens here, and what the gateway must carry out (gossip, metrics, log lines)
 * comes back as data. Pure apart from the state it owns: time and randomness come in `components`.
 */
import type { HoldEntry } from '../holds/entry.ts'
import { holdLine, releaseLine, renewLine } from '../holds/log-lines.ts'
import type { Settlement } from '../holds/settle.ts'
import type { TrialEntry } from '../trials/entry.ts'
import type { BalancerKey, RouteRef } from '../adaptive/types.ts'
import type { RateLimitBackoff } from './backoffs.ts'
import type { RoutingLog } from './log.ts'
import { planRequest } from './request-plan.ts'
import { NO_TRIALS, RequestRoute, type HoldChange, type HoldNews, type RouteRequest, type RouterComponents, type RouteShared, type RouteTarget } from './request-route.ts'
import type { PlanInput, RequestPlan } from './types.ts'

/** Expired hold tombstones are collected every this many cycles (once a minute). */
const HOLD_COLLECT_CYCLES = 12

/** The router of one node. */
export type Router = ReturnType<typeof createRouter>

/** Creates the router of one node over its routing state. */
export function createRouter(components: RouterComponents) {
  const { balancer, holds, backoffs, now } = components

  const trialChanges = (): readonly TrialEntry[] => {
    const changes = balancer.trials.changes()
    return changes.length === 0 ? NO_TRIALS : changes
  }

  /** The routes a hold covers: the held model, or every model of a whole-key hold. */
  const routesOf = (entry: HoldEntry): RouteRef[] => {
    if (entry.model !== null) return [{ provider: entry.provider, model: entry.model, keyId: entry.keyId }]
    return balancer.routes().filter((route) => route.provider === entry.provider && route.keyId === entry.keyId)
  }

  const releaseAll = (entries: readonly HoldEntry[]): void => {
    const at = now()
    for (const entry of entries) if (entry.state === 'released') for (const route of routesOf(entry)) balancer.releaseRoute(route, at)
  }

  const NO_NEWS: HoldNews = Object.freeze({ changes: [], changed: Object.freeze([]) as readonly HoldEntry[] }) as HoldNews

  const settle = (settlement: Settlement, log?: RoutingLog, requestModel?: string): HoldNews => {
    if (settlement.events.length === 0 && settlement.changed.length === 0) return NO_NEWS
    const at = now()
    const changes: HoldChange[] = []
    for (const event of settlement.events) {
      const entry = event.entry
      const model = requestModel ?? entry.model ?? 'every model'
      const route = { provider: entry.provider, model, key: components.keyName(entry.provider, entry.keyId) }
      let change: HoldChange
      if (event.kind === 'placed') {
        const held = holds.holdsOn(entry.provider, entry.keyId, entry.model ?? '').find((candidate) => candidate.entry.model === entry.model)
        const waitMs = held ? held.dueAt - entry.waitStartedAt : entry.baseWaitMs
        const line = holdLine({ ...route, reason: entry.reason, wholeKey: entry.model === null, waitMs, askedWaitMs: event.askedWaitMs })
        // A held key's routes read failed at once: every model of a whole-key hold.
        for (const covered of routesOf(entry)) balancer.failRoute(covered, at)
        if (entry.model === null && requestModel !== undefined) balancer.failRoute({ provider: entry.provider, model: requestModel, keyId: entry.keyId }, at)
        change = { kind: 'placed', provider: entry.provider, key: route.key, model: entry.model, reason: entry.reason, line }
      } else if (event.kind === 'renewed') {
        const line = renewLine({ ...route, reason: entry.reason, waitMs: entry.baseWaitMs, refusedAgain: event.outcome === 'refused_again' })
        change = { kind: 'renewed', provider: entry.provider, key: route.key, model: entry.model, reason: entry.reason, outcome: event.outcome, line }
      } else {
        const line = releaseLine({ ...route, cause: event.cause })
        for (const covered of routesOf(entry)) balancer.releaseRoute(covered, at)
        change = { kind: 'released', provider: entry.provider, key: route.key, model: entry.model, cause: event.cause, line }
      }
      changes.push(change)
      log?.add(change.line)
    }
    if (settlement.changed.length > 0) balancer.holdsChanged()
    return { changes, changed: settlement.changed }
  }

  const backOff = (backoff: RateLimitBackoff): boolean => {
    if (!backoffs.add(backoff)) return false
    balancer.holdsChanged()
    return true
  }

  const shared: RouteShared = { settle, backOff, trialChanges }
  let cycles = 0

  return {
    /** The plan of a request, or null when no configured provider has a key for its model. */
    plan: (input: Omit<PlanInput, 'settings' | 'now' | 'random'>): RequestPlan | null =>
      planRequest(components, {
        model: input.model,
        pinnedProvider: input.pinnedProvider,
        fallbacks: input.fallbacks,
        sessionId: input.sessionId,
        directKey: input.directKey,
        settings: components.settings(),
        now: now(),
        random: components.random,
        log: input.log,
      }),
    /** The route of a planned request through `targets` (the plan's, bound to the node's providers). */
    route: <T extends RouteTarget<K>, K extends BalancerKey>(plan: RequestPlan, targets: readonly T[], request: RouteRequest<T>): RequestRoute<T, K> =>
      new RequestRoute(components, shared, plan, targets, request),
    /** Applies a settlement made outside a request (an operator clear, a key edit, a peer's news). */
    settle,
    /** Sends the routes of released holds to recovering (an operator release, a key edit, a peer's release). */
    released: releaseAll,
    /** Entries from elsewhere (a peer, Postgres) changed this node's set: their routes fail or recover. */
    merged(entries: readonly HoldEntry[]): void {
      if (entries.length === 0) return
      // A hold learned from a peer or Postgres fails its routes here too, so its release sends them to recovering.
      const at = now()
      for (const entry of entries) if (entry.state === 'held') for (const route of routesOf(entry)) balancer.failRoute(route, at)
      releaseAll(entries)
      balancer.holdsChanged()
    },
    /** Backs a key off until its window resets; true when that is news here. */
    backOff,
    /** The node's routing cycle (every RECOMPUTE_INTERVAL_MS): backoffs expired, weights recomputed, tombstones collected; returns trial rounds changed. */
    recompute(): readonly TrialEntry[] {
      const at = now()
      // Selection tables skip backed-off keys: one that expired changes them.
      if (backoffs.expire(at)) balancer.holdsChanged()
      balancer.recompute(at)
      if (++cycles % HOLD_COLLECT_CYCLES === 0) holds.collect(at)
      return trialChanges()
    },
    /** Rounds from peers (already checked); returns what this node must send back (newer rounds, its own changes). */
    mergeTrials(entries: readonly TrialEntry[]): TrialEntry[] {
      const newer = balancer.mergeTrials(entries, now())
      // A peer behind (restarted, or back from a partition) hears the newer rounds; our own pending changes go with them.
      const changes = balancer.trials.changes()
      return changes.length === 0 ? newer : [...newer.filter((entry) => !changes.includes(entry)), ...changes]
    },
    /** Trial rounds changed since the last call (planning claims a trial), for the fleet. */
    trialChanges,
  }
}
