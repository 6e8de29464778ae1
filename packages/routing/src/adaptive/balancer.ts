/**
 * The adaptive load balancer of one node: metrics in, a recompute every 5 s, selection tables out.
 * Spec: reference/adaptive-load-balancing.txt; reference/adaptive-routing-overview.txt, "How
 * adaptive routing works". Time and randomness come in as arguments; nothing here reads a clock.
 */
import { countsAgainstKey } from '../failures/failure-class.ts'
import { createTrials, type Trials } from '../trials/trials.ts'
import type { TrialEntry } from '../trials/entry.ts'
import { TRIAL_MAX_WAIT_MS } from '../trials/timing.ts'
import { decideDirection, type DirectionDecision, type DirectionOptions } from './directions.ts'
import { createRouteMetrics, displayLatency, enterFailed, enterRecovering, errorRate, recordAttempt, type RouteMetrics } from './metrics.ts'
import { downNow, rescoreModel, routeWeight } from './scoring.ts'
import { buildModelTable, type ModelTable, type RotationWeights } from './tables.ts'
import { FAIL_SUSTAINED_MS, MAX_CACHED_TABLES, RECOVERY_MAX_FAILURES, RECOVERY_PROBE_IDLE_MS, TABLE_IDLE_CYCLES } from './tuning.ts'
import { keyServesModel as servesModel, routeKey, type AttemptOutcome, type BalancerKey, type BalancerProvider, type HeldPredicate, type RouteRef, type RouteSnapshot } from './types.ts'

/** What the balancer is created with. */
export interface AdaptiveBalancerInit {
  providers: readonly BalancerProvider[]
  /** The held-keys logic's answer; call `holdsChanged()` whenever it would change. */
  isHeld: HeldPredicate
  /** The fleet's trial rounds as this node knows them; default: a node alone (per-node trials). */
  trials?: Trials
}

/** The adaptive load balancer. Hot-path methods read tables; the rest runs off the hot path. */
export type AdaptiveBalancer = ReturnType<typeof createAdaptiveBalancer>

/** Creates the adaptive load balancer of one node. */
export function createAdaptiveBalancer(init: AdaptiveBalancerInit) {
  const isHeld = init.isHeld
  const trials = init.trials ?? createTrials({ nodeId: 'local' })
  let providers: readonly BalancerProvider[] = []
  let keysByProvider = new Map<string, Map<string, BalancerKey>>()
  const metrics = new Map<string, RouteMetrics>()
  const tables = new Map<string, ModelTable>()
  let cycle = 0
  let holdsVersion = 0

  const metricsOf = (provider: string, model: string, keyId: string) => metrics.get(routeKey(provider, model, keyId))

  const keyOf = (provider: string, keyId: string) => keysByProvider.get(provider)?.get(keyId)

  /** The metrics of a configured route, created on first use; undefined for a key we do not know (a caller's own key). */
  const track = (route: RouteRef, now: number): RouteMetrics | undefined => {
    const id = routeKey(route.provider, route.model, route.keyId)
    const existing = metrics.get(id)
    if (existing !== undefined) return existing
    const key = keyOf(route.provider, route.keyId)
    if (key === undefined || !servesModel(key, route.model)) return undefined
    const created = createRouteMetrics(route.provider, route.model, route.keyId, now)
    metrics.set(id, created)
    return created
  }

  const build = (model: string) =>
    buildModelTable(model, providers, (provider, keyId) => metricsOf(provider, model, keyId), isHeld, cycle, holdsVersion)

  const tableFor = (model: string): ModelTable => {
    let table = tables.get(model)
    if (table === undefined || table.holdsVersion !== holdsVersion) {
      const cached = table !== undefined
      table = build(model)
      // Past the cap a model's table is built for the request and not kept (slow, but bounded).
      if (cached || tables.size < MAX_CACHED_TABLES) tables.set(model, table)
    }
    table.usedCycle = cycle
    return table
  }

  const setProviders = (next: readonly BalancerProvider[]) => {
    providers = next
    keysByProvider = new Map(next.map((entry) => [entry.provider, new Map(entry.keys.map((key) => [key.id, key]))]))
    for (const [id, route] of metrics) {
      const key = keyOf(route.provider, route.keyId)
      if (key === undefined || !servesModel(key, route.model)) metrics.delete(id)
    }
    tables.clear()
  }

  /** Keys sharing a direction's load: serving the model, neither failed nor held (never-used ones included). */
  const keysServing = (provider: string, model: string) =>
    [...(keysByProvider.get(provider)?.values() ?? [])].filter((key) => servesModel(key, model) && !isHeld(provider, key.id, model) && metricsOf(provider, model, key.id)?.state !== 'failed').length

  /** Fails a tracked route; its model's table is rebuilt on the next selection. */
  function fail(tracked: RouteMetrics, now: number): void {
    enterFailed(tracked, now)
    tables.delete(tracked.model)
  }

  /** A failed route goes to recovering, at the bottom of its ramp ("so the key earns its traffic back"). */
  function recover(tracked: RouteMetrics, now: number): void {
    enterRecovering(tracked, now)
    tracked.recoveryProgress = 0
    tracked.weight = routeWeight(tracked)
    tables.delete(tracked.model)
  }

  /** Folds a finished attempt into its route; only this worker's `own` attempts change in-flight counts and trials. */
  function finished(outcome: AttemptOutcome, own: boolean): void {
    const tracked = track(outcome, outcome.now)
    if (tracked === undefined) return
    if (own) tracked.inFlight = Math.max(0, tracked.inFlight - 1)
    const before = tracked.state
    // A refusal fails its routes through the hold it places (`failRoute`), not here: a stale refusal places none.
    recordAttempt(tracked, outcome)
    // A held route is settled by its hold's check, not by trials.
    if (isHeld(outcome.provider, outcome.keyId, outcome.model)) return
    if (before === 'failed') return answeredWhileFailed(tracked, outcome, own)
    if (outcome.failureClass === null) return
    if (before === 'recovering' ? tracked.recoveryFailures < RECOVERY_MAX_FAILURES : !downNow(tracked, outcome.now)) return
    // Failing on its metrics right now (not at the recompute): out of rotation, and its trials start.
    fail(tracked, outcome.now)
    if (own) trials.routeFailed(tracked, outcome.now)
  }

  /**
   * An answer from a route failed here. Any request sent after the failure that was served proves
   * it: the route recovers, here and (by its served round) on every node. A failure counts only as
   * this node's own trial's answer.
   */
  function answeredWhileFailed(tracked: RouteMetrics, outcome: AttemptOutcome, own: boolean): void {
    const startedAt = outcome.now - Math.max(0, outcome.latencyMs)
    const failureClass = outcome.failureClass
    if (failureClass === null) {
      if (startedAt < tracked.stateSince) return
      recover(tracked, outcome.now)
    }
    if (own) trials.answered(outcome, startedAt, failureClass === null ? 'served' : countsAgainstKey(failureClass) ? 'failed' : 'inconclusive', outcome.now)
  }

  /**
   * A peer of this region found the route down: it fails here too unless it served something since
   * that outage began, so a region pays for one outage once. Only a recent round just opened (no
   * claim yet): a joining node's pull of old rounds fails nothing.
   */
  function adoptFailure(entry: TrialEntry, now: number): void {
    if (entry.claim !== null || entry.region !== trials.region || now - entry.round.wallMs > TRIAL_MAX_WAIT_MS + FAIL_SUSTAINED_MS) return
    if (isHeld(entry.provider, entry.keyId, entry.model)) return
    const tracked = track(entry, now)
    if (tracked === undefined || tracked.state === 'failed') return
    if (tracked.lastServedAt !== null && tracked.lastServedAt >= entry.round.wallMs - FAIL_SUSTAINED_MS) return
    fail(tracked, now)
  }

  /** Every tracked route, plus the never-used keys of the models configured or in use (cold, at full weight). */
  function snapshotRoutes(): RouteSnapshot[] {
    const models = new Set<string>(tables.keys())
    for (const route of metrics.values()) models.add(route.model)
    for (const key of providers.flatMap((entry) => entry.keys)) {
      for (const model of key.models) if (model !== '*') models.add(model)
      if (key.aliases !== undefined) for (const model of Object.keys(key.aliases)) models.add(model)
    }
    return [...models].flatMap((model) =>
      tableFor(model).directions.flatMap((direction) => {
        const attempts = direction.keys.reduce((sum, key) => sum + (metrics.get(routeKey(direction.provider, model, key.id))?.attempts ?? 0), 0)
        return direction.keys.map((key, index): RouteSnapshot => {
          const route = metrics.get(routeKey(direction.provider, model, key.id))
          const held = isHeld(direction.provider, key.id, model)
          const weight = direction.rotation.adaptive.weights[index]!
          return {
            provider: direction.provider,
            model,
            keyId: key.id,
            keyName: keyOf(direction.provider, key.id)?.name ?? key.name,
            state: held ? 'failed' : (route?.state ?? 'healthy'),
            held,
            weight,
            expectedShare: direction.adaptiveTotal > 0 ? weight / direction.adaptiveTotal : 0,
            actualShare: attempts > 0 ? (route?.attempts ?? 0) / attempts : 0,
            errorRate: route === undefined ? 0 : errorRate(route),
            latencyMs: route === undefined ? null : displayLatency(route),
            inFlight: route?.inFlight ?? 0,
            parts: {
              errorPenalty: route?.errorPenalty ?? 0,
              latencyPenalty: route?.latencyPenalty ?? 0,
              utilisation: route?.utilisation ?? 0,
              recoveryProgress: route?.recoveryProgress ?? 1,
            },
          }
        })
      }),
    )
  }

  setProviders(init.providers)

  return {
    /** Replaces the providers and keys; metrics of removed keys, and of models a key no longer serves, are dropped. */
    setProviders,
    /** Tells the balancer that holds were placed or released, so tables re-read `isHeld`. */
    holdsChanged(): void {
      holdsVersion++
    },
    /** An attempt was sent on a route (in-flight + 1). Pair each with one `attemptFinished`. */
    attemptStarted(route: RouteRef, now: number): void {
      const tracked = track(route, now)
      if (tracked === undefined) return
      tracked.inFlight += 1
      tracked.lastAttemptAt = now
    },
    /** An attempt ended (in-flight - 1) with this outcome. A refusal's hold fails its routes through `failRoute`. */
    attemptFinished: (outcome: AttemptOutcome): void => finished(outcome, true),
    /** An attempt another worker of this node finished (issue 38): its metrics count here too; in-flight counts and trials are that worker's. */
    attemptObserved: (outcome: AttemptOutcome): void => finished(outcome, false),
    /** An attempt started but never sent (its body could not be expressed): in-flight - 1, nothing recorded; a trial's slot is freed. */
    attemptAbandoned(route: RouteRef, now: number): void {
      const tracked = metrics.get(routeKey(route.provider, route.model, route.keyId))
      if (tracked === undefined) return
      tracked.inFlight = Math.max(0, tracked.inFlight - 1)
      // Never sent: if it was this node's trial, the slot is free again.
      if (tracked.state === 'failed') trials.answered(route, now, 'inconclusive', now)
    },
    /** The 5-second recompute: score parts, states, weights, and fresh selection tables. */
    recompute(now: number): void {
      cycle++
      const byModel = new Map<string, RouteMetrics[]>()
      for (const route of metrics.values()) {
        const list = byModel.get(route.model)
        if (list === undefined) byModel.set(route.model, [route])
        else list.push(route)
      }
      const context = { isHeld, keysServing, routeFailed: (route: RouteMetrics, at: number) => trials.routeFailed(route, at) }
      for (const routes of byModel.values()) rescoreModel(routes, now, context)
      trials.collect(now)
      for (const [id, route] of metrics) {
        // A route idle for long enough that nothing of it is left to remember goes back to a cold start.
        if (route.state === 'healthy' && route.inFlight === 0 && route.attempts < 0.01 && route.baselineWeight < 0.01) metrics.delete(id)
      }
      for (const [model, table] of tables) {
        if (cycle - table.usedCycle > TABLE_IDLE_CYCLES) tables.delete(model)
        else tables.set(model, { ...build(model), usedCycle: table.usedCycle })
      }
    },
    /** Fails a route at once (the provider refused the key; reference: "Key Capabilities"). */
    failRoute(route: RouteRef, now: number): void {
      const tracked = track(route, now)
      if (tracked !== undefined) fail(tracked, now)
    },
    /** A hold on the route was released (a check served, or an operator): it goes to recovering. */
    releaseRoute(route: RouteRef, now: number): void {
      const tracked = track(route, now)
      if (tracked === undefined || tracked.state !== 'failed') return
      // Back on the bottom of the ramp at once, "so the key earns its traffic back" (reference: "Checking a held key again").
      recover(tracked, now)
    },
    /** The trial rounds this balancer's failed routes follow (the gateway carries their changes to the fleet). */
    trials,
    /** True when this request is the fleet's one trial of a route failed here on its metrics (not held): one attempt there first. */
    takeTrial(route: RouteRef, now: number): boolean {
      const tracked = metricsOf(route.provider, route.model, route.keyId)
      if (tracked === undefined || tracked.state !== 'failed' || isHeld(route.provider, route.keyId, route.model)) return false
      // Failed while held (no round opened then), or the fleet's last round served before this node's failure: a round of its own.
      const entry = trials.entry(route)
      if (entry === undefined || entry.state === 'served') trials.routeFailed(route, now)
      return trials.take(route, now)
    },
    /** True when a route recovering here had no request from this node for RECOVERY_PROBE_IDLE_MS: one attempt there first. */
    takeProbe(route: RouteRef, now: number): boolean {
      const tracked = metricsOf(route.provider, route.model, route.keyId)
      if (tracked === undefined || tracked.state !== 'recovering' || tracked.inFlight > 0 || isHeld(route.provider, route.keyId, route.model)) return false
      return tracked.lastAttemptAt === null || now - tracked.lastAttemptAt >= RECOVERY_PROBE_IDLE_MS
    },
    /**
     * Rounds from peers: a served one recovers the route here if it failed before it; a failing one
     * just opened in this region fails it here too if it served nothing since. Returns this node's newer rounds.
     */
    mergeTrials(entries: readonly TrialEntry[], now: number): TrialEntry[] {
      const { changed, newer } = trials.merge(entries, now)
      for (const entry of changed) {
        if (entry.state !== 'served') {
          adoptFailure(entry, now)
          continue
        }
        const tracked = metricsOf(entry.provider, entry.model, entry.keyId)
        // Served after this node's route failed: the outage is over here too (a later failure here is news the round does not answer).
        if (tracked !== undefined && tracked.state === 'failed' && tracked.stateSince <= entry.round.wallMs && !isHeld(entry.provider, entry.keyId, entry.model)) recover(tracked, now)
      }
      return newer
    },
    /** Level 1: the provider and fallbacks of a request for `model`. */
    selectDirection(model: string, options: DirectionOptions): DirectionDecision {
      return decideDirection(tableFor(model), options, tableFor)
    },
    /** Per-key weights for the rotation module, adaptive (or static with key selection off), 0 when held or failed: shared by every request until the next table build (read only). */
    rotationWeights(provider: string, model: string, routeSelectionEnabled = true): RotationWeights | undefined {
      const direction = tableFor(model).byProvider.get(provider)
      if (direction === undefined) return undefined
      return routeSelectionEnabled ? direction.rotation.adaptive : direction.rotation.static
    },
    /** True while the balancer still offers the route: its key serves the model and is neither failed nor held. */
    isRouteOffered(route: RouteRef): boolean {
      // The model's table lists the keys serving it, with the failed ones as of its build (every change of state rebuilds it).
      const direction = tableFor(route.model).byProvider.get(route.provider)
      const index = direction?.keyIndex.get(route.keyId)
      if (index === undefined || isHeld(route.provider, route.keyId, route.model)) return false
      return !direction!.rotation.adaptive.failedIndexes.includes(index)
    },
    /** Every known route with its weight, shares and score parts, for the routes API. */
    routes: snapshotRoutes,
  }
}
