/**
 * One node's history, pure: hold entries, route states after each recompute and request
 * outcomes go in; events to record, episodes to upsert, snapshots and per-minute counts come
 * out. Time comes in with every input. Spec: reference/adaptive-routing-overview.txt ("every
 * one of these decisions now leaves a record"); design.md, "History, incidents, request log".
 */
import { directionEntity, holdEntity, keyEntity, routeEntity, scopeOf } from '../entities.ts'
import { countRequest, type RequestOutcome } from './requests.ts'
import type { CountRow, DirectionCounts, Episode, HistoryEvent, ReleaseBy, RouteView, SnapshotRow, State } from './types.ts'

/** A hold entry as the fleet replicates it (the fields history reads). */
export interface HoldView {
  provider: string
  keyId: string
  model: string | null
  state: 'held' | 'released'
  reason: string
  message: string
  since: number
  rung: number
  checks: number
  baseWaitMs: number
  releaseCause: string | null
}

/** What an input produced. */
export interface TrackerOutput {
  events: HistoryEvent[]
  /** Episodes opened, changed or closed: upsert them. */
  episodes: Episode[]
}

/** Failed requests recorded as events per episode, at most (the counts keep the rest). */
const FAILED_REQUEST_EVENTS_PER_EPISODE = 50

const STATE_RANK: Record<State, number> = { healthy: 0, recovering: 1, degraded: 2, failed: 3 }
const worse = (a: State, b: State): State => (STATE_RANK[b] > STATE_RANK[a] ? b : a)

const RELEASE_BY: Record<string, ReleaseBy> = { served: 'check', settled: 'check', operator: 'operator', key_edit: 'edit', deleted: 'delete' }

const emptyCounts = (): DirectionCounts => ({ served: 0, failed: 0, redirected: 0, fallbackServed: 0, routingPicked: 0, callerNamed: 0, keptFailing: 0, checks: 0 })

/** The history of one node. */
export class NodeTracker {
  private readonly holds = new Map<string, HoldView>()
  private readonly routeStates = new Map<string, State>()
  private readonly directionStates = new Map<string, State>()
  /** Open episodes by entity. */
  private readonly open = new Map<string, Episode>()
  /** Providers failing per model, for the request classifier. */
  private readonly failing = new Map<string, Set<string>>()
  /** How many providers serve each model here (from the last recompute). */
  private readonly providersPerModel = new Map<string, number>()
  private counts = new Map<string, DirectionCounts & { provider: string; model: string }>()
  /** Requests and errors per route since the last snapshot. */
  private routeTraffic = new Map<string, { requests: number; errors: number }>()
  private failedEventsByEpisode = new Map<string, number>()
  /** The last failure class each route answered with, to name the cause of a state episode. */
  private readonly lastFailure = new Map<string, string>()
  private sequence = 0

  constructor(private readonly nodeId: string) {}

  /** Episodes still open on this node. */
  openEpisodes(): Episode[] {
    return [...this.open.values()]
  }

  /** A hold entry changed here (`local`) or arrived from a peer or the store (`peer`). */
  hold(entry: HoldView, origin: 'local' | 'peer', at: number): TrackerOutput {
    const id = JSON.stringify([entry.provider, entry.keyId, entry.model])
    const previous = this.holds.get(id)
    this.holds.set(id, { ...entry })
    if (entry.state === 'released') this.holds.delete(id)
    const entity = holdEntity(entry.provider, entry.keyId, entry.model)
    const base = { entity, provider: entry.provider, model: entry.model, keyId: entry.keyId }
    const out: TrackerOutput = { events: [], episodes: [] }
    const wasHeld = previous !== undefined && previous.state === 'held'
    if (entry.state === 'held' && (!wasHeld || previous.since !== entry.since)) {
      out.events.push({ at, kind: 'hold:placed', ...base, detail: { reason: entry.reason, message: entry.message, rung: entry.rung, wait_ms: entry.baseWaitMs, origin } })
      let episode = this.open.get(entity)
      if (episode === undefined || episode.cause !== 'hold') {
        if (episode !== undefined) this.close(episode, at, out)
        episode = this.openEpisode(entity, 'hold', at, entry.provider, entry.model, entry.keyId)
        episode.sawRefusal = origin === 'local'
        episode.action = 'held'
      } else if (origin === 'local') episode.sawRefusal = true
      episode.phase = 'held'
      episode.worstState = 'failed'
      episode.message = entry.message
      episode.recoveringSince = null
      if (!episode.reasons.includes(entry.reason)) episode.reasons.push(entry.reason)
      episode.updatedAt = at
      out.episodes.push(episode)
    } else if (entry.state === 'held' && wasHeld && entry.checks > previous.checks) {
      const outcome = entry.rung > previous.rung || entry.reason !== previous.reason ? 'refused_again' : 'inconclusive'
      // A peer's check is recorded by that peer; here only the new rung matters.
      if (origin === 'local') {
        out.events.push({ at, kind: 'hold:checked', ...base, detail: { outcome, reason: entry.reason, rung: entry.rung, message: entry.message } })
        this.addCheck(entity, entry.provider, entry.model, outcome, at, out)
      }
      const episode = this.open.get(entity)
      if (episode !== undefined) {
        episode.message = entry.message
        if (!episode.reasons.includes(entry.reason)) episode.reasons.push(entry.reason)
      }
    } else if (entry.state === 'released' && wasHeld) {
      const by = RELEASE_BY[entry.releaseCause ?? ''] ?? 'check'
      out.events.push({ at, kind: 'hold:released', ...base, detail: { by, cause: entry.releaseCause, reason: previous.reason, origin } })
      if (by === 'check' && origin === 'local') this.addCheck(entity, entry.provider, entry.model, 'served', at, out)
      const episode = this.open.get(entity)
      if (episode !== undefined) {
        episode.releasedBy = by
        // The key as it was is gone after an edit or delete: that problem is over (reference: "Releasing held keys").
        if (by === 'edit' || by === 'delete') this.close(episode, at, out)
        else {
          episode.phase = 'recovering'
          episode.recoveringSince = at
          episode.updatedAt = at
          out.episodes.push(episode)
        }
      }
    }
    return out
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

  /** A request finished; returns the episodes it touched (requests failed, last traffic). */
  request(outcome: RequestOutcome, pinnedRequestEvents = true): TrackerOutput {
    const out: TrackerOutput = { events: [], episodes: [] }
    const at = outcome.at
    for (const attempt of outcome.attempts) {
      const route = routeEntity(attempt.provider, attempt.model, attempt.keyId)
      let traffic = this.routeTraffic.get(route)
      if (traffic === undefined) this.routeTraffic.set(route, (traffic = { requests: 0, errors: 0 }))
      traffic.requests++
      const failureClass = attempt.failureClass !== null && attempt.failureClass !== 'caller_fault' && attempt.failureClass !== 'cancelled' ? attempt.failureClass : null
      if (failureClass !== null) {
        traffic.errors++
        this.lastFailure.set(route, failureClass)
      }
      for (const entity of [route, keyEntity(attempt.provider, attempt.keyId), directionEntity(attempt.provider, attempt.model)]) {
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
        if (changed && !out.episodes.includes(episode)) out.episodes.push(episode)
      }
    }
    const counting = countRequest(
      outcome,
      (model) => this.failing.get(model),
      (model) => (this.failing.get(model)?.size ?? 0) >= (this.providersPerModel.get(model) ?? Infinity),
    )
    if (counting === null) return out
    const countKey = `${counting.provider}\u0000${counting.model}`
    let counts = this.counts.get(countKey)
    if (counts === undefined) this.counts.set(countKey, (counts = { ...emptyCounts(), provider: counting.provider, model: counting.model }))
    for (const [field, value] of Object.entries(counting.add) as [keyof DirectionCounts, number][]) counts[field] += value
    if (outcome.served !== null) return out
    // A failed request counts on every open episode it ran into, once.
    const touched = new Set<Episode>()
    const candidates = outcome.attempts.length > 0 ? outcome.attempts : [{ provider: counting.provider, model: counting.model, keyId: '' }]
    for (const attempt of candidates) {
      for (const entity of [routeEntity(attempt.provider, attempt.model, attempt.keyId), keyEntity(attempt.provider, attempt.keyId), directionEntity(attempt.provider, attempt.model)]) {
        const episode = this.open.get(entity)
        if (episode !== undefined) touched.add(episode)
      }
    }
    for (const episode of touched) {
      episode.requestsFailed++
      if (counting.pinnedKeptFailed) episode.pinnedKeptFailed++
      if (counting.noAlternative) episode.failedNoAlternative++
      episode.updatedAt = at
      if (!out.episodes.includes(episode)) out.episodes.push(episode)
      const recorded = this.failedEventsByEpisode.get(episode.id) ?? 0
      if (pinnedRequestEvents && recorded < FAILED_REQUEST_EVENTS_PER_EPISODE) {
        this.failedEventsByEpisode.set(episode.id, recorded + 1)
        const last = outcome.attempts[outcome.attempts.length - 1]
        out.events.push({
          at,
          kind: 'request:failed',
          entity: episode.entity,
          provider: episode.provider,
          model: last?.model ?? outcome.model,
          keyId: last?.keyId ?? null,
          detail: { pinned: outcome.namedProvider !== null, named_provider: outcome.namedProvider, kept_on_failing: counting.pinnedKeptFailed, failure_class: last?.failureClass ?? null, attempts: outcome.attempts.length },
        })
      }
    }
    return out
  }

  /** The per-minute count rows accumulated since the last call (non-empty directions only). */
  takeCounts(at: number): CountRow[] {
    const rows: CountRow[] = []
    for (const counts of this.counts.values()) rows.push({ ...counts, at })
    this.counts = new Map()
    return rows
  }

  /** A snapshot row per route and per direction, with the traffic since the last snapshot. */
  snapshot(views: readonly RouteView[], at: number): SnapshotRow[] {
    const rows: SnapshotRow[] = []
    const directions = new Map<string, SnapshotRow & { states: State[]; latencySum: number; latencyCount: number }>()
    for (const view of views) {
      const entity = routeEntity(view.provider, view.model, view.keyId)
      const traffic = this.routeTraffic.get(entity) ?? { requests: 0, errors: 0 }
      const row: SnapshotRow = {
        at,
        entity,
        provider: view.provider,
        model: view.model,
        keyId: view.keyId,
        state: view.state,
        held: view.held,
        weight: view.weight,
        score: Math.max(0, Math.min(100, view.weight)),
        errorPenalty: view.parts.errorPenalty,
        latencyPenalty: view.parts.latencyPenalty,
        utilisation: view.parts.utilisation,
        recovery: view.parts.recoveryProgress,
        requests: traffic.requests,
        errors: traffic.errors,
        latencyMs: view.latencyMs,
      }
      rows.push(row)
      const directionKey = directionEntity(view.provider, view.model)
      let direction = directions.get(directionKey)
      if (direction === undefined) {
        direction = { ...row, entity: directionKey, keyId: null, held: true, weight: 0, score: 0, errorPenalty: 0, latencyPenalty: 0, utilisation: 0, recovery: 0, requests: 0, errors: 0, latencyMs: null, states: [], latencySum: 0, latencyCount: 0 }
        directions.set(directionKey, direction)
      }
      direction.states.push(view.state)
      direction.held &&= view.held
      direction.weight += view.weight
      direction.score = Math.max(direction.score, row.score)
      direction.errorPenalty = Math.max(direction.errorPenalty, row.errorPenalty)
      direction.latencyPenalty = Math.max(direction.latencyPenalty, row.latencyPenalty)
      direction.utilisation += row.utilisation
      direction.recovery = Math.max(direction.recovery, row.recovery)
      direction.requests += row.requests
      direction.errors += row.errors
      if (view.latencyMs !== null) {
        direction.latencySum += view.latencyMs
        direction.latencyCount++
      }
    }
    for (const direction of directions.values()) {
      const { states, latencySum, latencyCount, ...row } = direction
      rows.push({ ...row, state: directionState(states), latencyMs: latencyCount > 0 ? latencySum / latencyCount : null })
    }
    this.routeTraffic = new Map()
    return rows
  }

  /** An event that concerns no episode (edits, deletes, settings) passes through unchanged. */
  record(event: HistoryEvent): TrackerOutput {
    return { events: [event], episodes: [] }
  }

  /** Every open episode, marked lost (the node is stopping before they closed). */
  abandon(at: number): Episode[] {
    const episodes = [...this.open.values()]
    for (const episode of episodes) {
      episode.lost = true
      episode.updatedAt = at
    }
    this.open.clear()
    return episodes
  }

  private followRoute(view: RouteView, at: number, out: TrackerOutput): void {
    const entity = routeEntity(view.provider, view.model, view.keyId)
    // A hold episode on the route or its whole key follows the route's state after release.
    for (const holdKey of [entity, keyEntity(view.provider, view.keyId)]) {
      const held = this.open.get(holdKey)
      if (held === undefined || held.cause !== 'hold' || held.phase !== 'recovering') continue
      if (holdKey === entity ? view.state === 'healthy' : this.keyRecovered(view.provider, view.keyId, view)) this.close(held, at, out)
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
      const opened = this.openEpisode(entity, 'state', at, view.provider, view.model, view.keyId)
      opened.worstState = view.state
      opened.phase = view.state
      opened.action = view.state === 'failed' ? 'moved_traffic' : 'reduced_traffic'
      const cause = this.lastFailure.get(entity)
      if (cause !== undefined) opened.reasons.push(cause)
      out.episodes.push(opened)
      return
    }
    if (view.state === 'healthy') return this.close(episode, at, out)
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
      const opened = this.openEpisode(entity, 'state', at, direction.provider, direction.model, null)
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
    if (state === 'healthy') return this.close(episode, at, out)
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
    const countModel = model ?? '*'
    const countKey = `${provider}\u0000${countModel}`
    let counts = this.counts.get(countKey)
    if (counts === undefined) this.counts.set(countKey, (counts = { ...emptyCounts(), provider, model: countModel }))
    counts.checks++
  }

  private openEpisode(entity: string, cause: Episode['cause'], at: number, provider: string, model: string | null, keyId: string | null): Episode {
    const episode: Episode = {
      id: `${this.nodeId}:${at.toString(36)}:${(this.sequence++).toString(36)}`,
      entity,
      scope: scopeOf(entity),
      provider,
      models: model === null ? [] : [model],
      keyIds: keyId === null ? [] : [keyId],
      cause,
      phase: 'failed',
      openedAt: at,
      closedAt: null,
      updatedAt: at,
      worstState: 'degraded',
      reasons: [],
      action: 'reduced_traffic',
      checks: 0,
      checkOutcomes: {},
      requestsFailed: 0,
      pinnedKeptFailed: 0,
      failedNoAlternative: 0,
      sawRefusal: false,
      message: null,
      lastRequestAt: null,
      recoveringSince: null,
      releasedBy: null,
      lost: false,
    }
    this.open.set(entity, episode)
    return episode
  }

  private close(episode: Episode, at: number, out: TrackerOutput): void {
    episode.phase = 'closed'
    episode.closedAt = at
    episode.updatedAt = at
    this.open.delete(episode.entity)
    this.failedEventsByEpisode.delete(episode.id)
    if (!out.episodes.includes(episode)) out.episodes.push(episode)
  }
}

/** A direction's state from its keys' states: failed when every key failed (reference: "When every key is held"). */
export function directionState(states: readonly State[]): State {
  if (states.length === 0) return 'healthy'
  if (states.every((state) => state === 'failed')) return 'failed'
  if (states.some((state) => state === 'failed' || state === 'degraded')) return 'degraded'
  if (states.some((state) => state === 'recovering')) return 'recovering'
  return 'healthy'
}
