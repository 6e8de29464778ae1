/**
 * One node's history, pure: hold entries, route states after each recompute and request
 * outcomes go in; events to record, episodes to upsert, snapshots and per-minute counts come
 * out. Time comes in with every input. Spec: reference/adaptive-routing-overview.txt ("every
 * one of these decisions now leaves a record"); design.md, "History, incidents, request log".
 */
import { directionEntity, keyEntity, routeEntity } from '../entities.ts'
import { directionState, OpenEpisodes, worse } from './episodes.ts'
import { followHold, holdId, type HoldView } from './holds.ts'
import { countRequest, type RequestOutcome } from './requests.ts'
import { RouteTrafficTable, snapshotRows } from './snapshot.ts'
import type { CountRow, DirectionCounts, Episode, HistoryEvent, RouteView, SnapshotRow, State, TrackerOutput } from './types.ts'

export { directionState } from './episodes.ts'
export type { HoldView } from './holds.ts'
export type { TrackerOutput } from './types.ts'

const emptyCounts = (): DirectionCounts => ({ served: 0, failed: 0, redirected: 0, fallbackServed: 0, routingPicked: 0, callerNamed: 0, keptFailing: 0, checks: 0 })

type CountsRow = DirectionCounts & { provider: string; model: string }

/** What a request that touched no episode returns (most requests): shared, never written to. */
const NOTHING: TrackerOutput = Object.freeze({ events: Object.freeze([]) as unknown as HistoryEvent[], episodes: Object.freeze([]) as unknown as Episode[] }) as TrackerOutput

/** The history of one node. */
export class NodeTracker {
  private readonly holds = new Map<string, HoldView>()
  private readonly routeStates = new Map<string, State>()
  private readonly directionStates = new Map<string, State>()
  /** Open episodes by entity. */
  private readonly open: OpenEpisodes
  /** Providers failing per model, for the request classifier. */
  private readonly failing = new Map<string, Set<string>>()
  /** How many providers serve each model here (from the last recompute). */
  private readonly providersPerModel = new Map<string, number>()
  /** Per-minute counts by provider, then model. */
  private counts = new Map<string, Map<string, CountsRow>>()
  /** Requests and errors per route since the last snapshot. */
  private routeTraffic = new RouteTrafficTable()
  /** The last failure class each route answered with, to name the cause of a state episode. */
  private readonly lastFailure = new Map<string, string>()

  /** The classifier's two questions, made once (not a closure per request). */
  private readonly failingFor = (model: string): ReadonlySet<string> | undefined => this.failing.get(model)
  private readonly noneLeftFor = (model: string): boolean => (this.failing.get(model)?.size ?? 0) >= (this.providersPerModel.get(model) ?? Infinity)

  constructor(nodeId: string) {
    this.open = new OpenEpisodes(nodeId)
  }

  /** Episodes still open on this node. */
  openEpisodes(): Episode[] {
    return this.open.list()
  }

  /** A hold entry changed here (`local`) or arrived from a peer or the store (`peer`). */
  hold(entry: HoldView, origin: 'local' | 'peer', at: number): TrackerOutput {
    const id = holdId(entry)
    const previous = this.holds.get(id)
    if (entry.state === 'released') this.holds.delete(id)
    else this.holds.set(id, { ...entry })
    return followHold(previous, entry, origin, at, this.open, (entity, provider, model, outcome, when, out) => this.addCheck(entity, provider, model, outcome, when, out))
  }

  /** Routes after a recompute (state as the dashboard shows it: held reads failed). */
  routes(views: readonly RouteView[], at: number): TrackerOutput {
    const out: TrackerOutput = { events: [], episodes: [] }
    const directions = new Map<string, { provider: string; model: string; states: State[]; heldFailed: number; keyIds: string[] }>()
    for (const view of views) {
      const entity = routeEntity(view.provider, view.model, view.keyId)
      const previous = this.routeStates.get(entity) ?? 'healthy'
      if (previous !== view.state) out.events.push({ at, kind: 'route:state', entity, provider: view.provider, model: view.model, keyId: view.keyId, detail: { from: previous, to: view.state, held: view.held } })
      this.routeStates.set(entity, view.state)
      const directionKey = directionEntity(view.provider, view.model)
      let direction = directions.get(directionKey)
      if (direction === undefined) directions.set(directionKey, (direction = { provider: view.provider, model: view.model, states: [], heldFailed: 0, keyIds: [] }))
      direction.states.push(view.state)
      direction.keyIds.push(view.keyId)
      if (view.held) direction.heldFailed++
      this.followRoute(view, at, out)
    }
    this.failing.clear()
    this.providersPerModel.clear()
    for (const [entity, direction] of directions) {
      this.providersPerModel.set(direction.model, (this.providersPerModel.get(direction.model) ?? 0) + 1)
      const state = directionState(direction.states)
      const previous = this.directionStates.get(entity) ?? 'healthy'
      if (previous !== state) out.events.push({ at, kind: 'direction:state', entity, provider: direction.provider, model: direction.model, keyId: null, detail: { from: previous, to: state } })
      this.directionStates.set(entity, state)
      if (state === 'failed') {
        let providers = this.failing.get(direction.model)
        if (providers === undefined) this.failing.set(direction.model, (providers = new Set()))
        providers.add(direction.provider)
      }
      this.followDirection(entity, direction, state, at, out)
    }
    return out
  }

  /** A request finished; returns the episodes it touched (requests failed, last traffic). Keeps nothing of `outcome`. */
  request(outcome: RequestOutcome, pinnedRequestEvents = true): TrackerOutput {
    let out: TrackerOutput | null = null
    const at = outcome.at
    // With no episode open (the usual case) a request touches none: no entity key is built.
    const watching = this.open.size > 0
    for (const attempt of outcome.attempts) {
      const traffic = this.routeTraffic.at(attempt.provider, attempt.model, attempt.key_id)
      traffic.requests++
      const failureClass = attempt.failure_class !== null && attempt.failure_class !== 'caller_fault' && attempt.failure_class !== 'context_length' && attempt.failure_class !== 'cancelled' ? attempt.failure_class : null
      if (failureClass !== null) {
        traffic.errors++
        this.lastFailure.set(routeEntity(attempt.provider, attempt.model, attempt.key_id), failureClass)
      }
      if (!watching) continue
      for (const entity of [routeEntity(attempt.provider, attempt.model, attempt.key_id), keyEntity(attempt.provider, attempt.key_id), directionEntity(attempt.provider, attempt.model)]) {
        const episode = this.open.get(entity)
        if (episode === undefined) continue
        let changed = false
        if (episode.lastRequestAt !== at) {
          episode.lastRequestAt = at
          changed = true
        }
        if (failureClass !== null && episode.cause === 'state' && !episode.reasons.includes(failureClass)) {
          episode.reasons.push(failureClass)
          changed = true
        }
        out ??= { events: [], episodes: [] }
        if (changed && !out.episodes.includes(episode)) out.episodes.push(episode)
      }
    }
    const counting = countRequest(outcome, this.failingFor, this.noneLeftFor)
    if (counting === null) return out ?? NOTHING
    const counts = this.countsOf(counting.provider, counting.model)
    const add = counting.add
    for (const field in add) counts[field as keyof DirectionCounts] += add[field as keyof DirectionCounts]!
    if (outcome.served !== null || !watching) return out ?? NOTHING
    // A failed request counts on every open episode it ran into, once.
    const touched = new Set<Episode>()
    const candidates = outcome.attempts.length > 0 ? outcome.attempts : [{ provider: counting.provider, model: counting.model, key_id: '' }]
    for (const attempt of candidates) {
      for (const entity of [routeEntity(attempt.provider, attempt.model, attempt.key_id), keyEntity(attempt.provider, attempt.key_id), directionEntity(attempt.provider, attempt.model)]) {
        const episode = this.open.get(entity)
        if (episode !== undefined) touched.add(episode)
      }
    }
    if (touched.size === 0) return out ?? NOTHING
    out ??= { events: [], episodes: [] }
    for (const episode of touched) {
      episode.requestsFailed++
      if (counting.pinnedKeptFailed) episode.pinnedKeptFailed++
      if (counting.noAlternative) episode.failedNoAlternative++
      episode.updatedAt = at
      if (!out.episodes.includes(episode)) out.episodes.push(episode)
      if (pinnedRequestEvents && this.open.takeFailedEvent(episode)) {
        const last = outcome.attempts[outcome.attempts.length - 1]
        out.events.push({
          at,
          kind: 'request:failed',
          entity: episode.entity,
          provider: episode.provider,
          model: last?.model ?? outcome.model,
          keyId: last?.key_id ?? null,
          detail: { pinned: outcome.namedProvider !== null, named_provider: outcome.namedProvider, kept_on_failing: counting.pinnedKeptFailed, failure_class: last?.failure_class ?? null, attempts: outcome.attempts.length },
        })
      }
    }
    return out
  }

  /** The count row of a direction this minute, made the first time. */
  private countsOf(provider: string, model: string): CountsRow {
    let byModel = this.counts.get(provider)
    if (byModel === undefined) this.counts.set(provider, (byModel = new Map()))
    let counts = byModel.get(model)
    if (counts === undefined) byModel.set(model, (counts = { ...emptyCounts(), provider, model }))
    return counts
  }

  /** The per-minute count rows accumulated since the last call (non-empty directions only). */
  takeCounts(at: number): CountRow[] {
    const rows: CountRow[] = []
    for (const byModel of this.counts.values()) for (const counts of byModel.values()) rows.push({ ...counts, at })
    this.counts = new Map()
    return rows
  }

  /** A snapshot row per route and per direction, with the traffic since the last snapshot. */
  snapshot(views: readonly RouteView[], at: number): SnapshotRow[] {
    const rows = snapshotRows(views, this.routeTraffic, at)
    this.routeTraffic = new RouteTrafficTable()
    return rows
  }

  /** An event that concerns no episode (edits, deletes, settings) passes through unchanged. */
  record(event: HistoryEvent): TrackerOutput {
    return { events: [event], episodes: [] }
  }

  /** Every open episode, marked lost (the node is stopping before they closed). */
  abandon(at: number): Episode[] {
    return this.open.abandon(at)
  }

  private followRoute(view: RouteView, at: number, out: TrackerOutput): void {
    const entity = routeEntity(view.provider, view.model, view.keyId)
    // A hold episode on the route or its whole key follows the route's state after release.
    for (const holdKey of [entity, keyEntity(view.provider, view.keyId)]) {
      const held = this.open.get(holdKey)
      if (held === undefined || held.cause !== 'hold' || held.phase !== 'recovering') continue
      if (holdKey === entity ? view.state === 'healthy' : this.keyRecovered(view.provider, view.keyId, view)) this.open.close(held, at, out)
      else if (view.state === 'failed' && !view.held) {
        held.phase = 'failed'
        held.updatedAt = at
        out.episodes.push(held)
      }
    }
    if (view.held) return
    const episode = this.open.get(entity)
    if (episode !== undefined && episode.cause === 'hold') return
    if (episode === undefined) {
      if (view.state !== 'degraded' && view.state !== 'failed') return
      const opened = this.open.start(entity, 'state', at, view.provider, view.model, view.keyId)
      opened.worstState = view.state
      opened.phase = view.state
      opened.action = view.state === 'failed' ? 'moved_traffic' : 'reduced_traffic'
      const cause = this.lastFailure.get(entity)
      if (cause !== undefined) opened.reasons.push(cause)
      out.episodes.push(opened)
      return
    }
    if (view.state === 'healthy') return this.open.close(episode, at, out)
    const phase = view.state === 'recovering' ? 'recovering' : view.state
    if (phase === episode.phase) return
    if (phase === 'recovering') episode.recoveringSince = at
    episode.phase = phase
    episode.worstState = worse(episode.worstState, view.state)
    if (view.state === 'failed') episode.action = 'moved_traffic'
    episode.updatedAt = at
    out.episodes.push(episode)
  }

  /** True when every tracked route of the key is healthy again (the released whole-key hold is over). */
  private keyRecovered(provider: string, keyId: string, current: RouteView): boolean {
    if (current.state !== 'healthy') return false
    const prefix = `route:${provider}:`
    const suffix = `:${keyId}`
    for (const [entity, state] of this.routeStates) if (entity.startsWith(prefix) && entity.endsWith(suffix) && state !== 'healthy') return false
    return true
  }

  private followDirection(entity: string, direction: { provider: string; model: string; states: State[]; heldFailed: number; keyIds: string[] }, state: State, at: number, out: TrackerOutput): void {
    const episode = this.open.get(entity)
    // Every key failed and not all of them by a hold (a held key has its own incident).
    const failedByMetrics = state === 'failed' && direction.heldFailed < direction.states.length
    if (episode === undefined) {
      if (!failedByMetrics) return
      const opened = this.open.start(entity, 'state', at, direction.provider, direction.model, null)
      opened.keyIds = [...direction.keyIds]
      opened.worstState = 'failed'
      opened.phase = 'failed'
      opened.action = 'moved_traffic'
      for (const keyId of direction.keyIds) {
        const cause = this.lastFailure.get(routeEntity(direction.provider, direction.model, keyId))
        if (cause !== undefined && !opened.reasons.includes(cause)) opened.reasons.push(cause)
      }
      out.episodes.push(opened)
      return
    }
    if (state === 'healthy') return this.open.close(episode, at, out)
    const phase = state === 'failed' ? 'failed' : 'recovering'
    if (phase === episode.phase) return
    episode.phase = phase
    if (phase === 'recovering') episode.recoveringSince = at
    episode.updatedAt = at
    out.episodes.push(episode)
  }

  private addCheck(entity: string, provider: string, model: string | null, outcome: string, at: number, out: TrackerOutput): void {
    const episode = this.open.get(entity)
    if (episode !== undefined) {
      episode.checks++
      episode.checkOutcomes[outcome] = (episode.checkOutcomes[outcome] ?? 0) + 1
      episode.lastRequestAt = at
      episode.updatedAt = at
      if (!out.episodes.includes(episode)) out.episodes.push(episode)
    }
    this.countsOf(provider, model ?? '*').checks++
  }
}
