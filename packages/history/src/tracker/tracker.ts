/**
 * One node's history, pure: hold entries, route states after each recompute and request
 * outcomes go in; events to record, episodes to upsert, snapshots and per-minute counts come
 * out. Time comes in with every input. Spec: reference/adaptive-routing-overview.txt ("every
 * one of these decisions now leaves a record"); design.md, "History, incidents, request log".
 */
import { countsAgainstKey, holdId, type RouteState } from '@switchboard/routing'
import { directionEntity, keyEntity, routeEntity } from '../entities.ts'
import { directionState, noteReason, OpenEpisodes, worse } from './episodes.ts'
import { followHold, type HoldView } from './holds.ts'
import { countRequest, type RequestOutcome } from './requests.ts'
import { RouteTrafficTable, snapshotRows, WorstSince } from './snapshot.ts'
import type { CountRow, DirectionCounts, Episode, HistoryEvent, RouteView, SnapshotRow, TrackerOutput } from './types.ts'

export { directionState } from './episodes.ts'
export type { HoldView } from './holds.ts'
export type { TrackerOutput } from './types.ts'

/**
 * Failed requests in a row for a model, with nothing left to serve them and none served in
 * between, after which the model counts as failing (issue 36, item 1): a run, not one blip.
 */
const NONE_LEFT_AFTER = 3

/** Failures further apart than this are no run: the older ones are stale evidence. */
const RUN_GAP_MS = 60_000

/** A direction's routes at one recompute: their states, how many are held, their keys. */
type DirectionViews = { provider: string; model: string; states: RouteState[]; heldFailed: number; keyIds: string[] }

/** A model's run of failed requests on this node. */
interface FailingRun {
  failed: number
  /** When the last of them failed. */
  lastAt: number
}

/** What a request that touched no episode returns (most requests): shared, never written to. */
const NOTHING: TrackerOutput = Object.freeze({ events: Object.freeze([]) as unknown as HistoryEvent[], episodes: Object.freeze([]) as unknown as Episode[] }) as TrackerOutput

/** The history of one node. */
export class NodeTracker {
  private readonly holds = new Map<string, HoldView>()
  private readonly routeStates = new Map<string, RouteState>()
  private readonly directionStates = new Map<string, RouteState>()
  /** Open episodes by entity (the recorder rewrites them each period and marks them lost at shutdown). */
  readonly open: OpenEpisodes
  /** Per model: failed requests in a row with nothing left to serve them (reset by a served one). */
  private readonly runs = new Map<string, FailingRun>()
  /** Per-minute counts by provider, then model. */
  private counts = new Map<string, Map<string, Omit<CountRow, 'at'>>>()
  /** Requests and errors per route since the last snapshot. */
  private routeTraffic = new RouteTrafficTable()
  /** The worst state each route and direction was in at any recompute since the last snapshot. */
  private worstSince = new WorstSince()
  /** The last failure class each route answered with, to name the cause of a state episode. */
  private readonly lastFailure = new Map<string, string>()

  constructor(nodeId: string) {
    this.open = new OpenEpisodes(nodeId)
  }

  /** A hold entry changed here (`local`) or arrived from a peer or the store (`peer`). */
  hold(entry: HoldView, origin: 'local' | 'peer', at: number): TrackerOutput {
    const id = holdId(entry)
    const previous = this.holds.get(id)
    if (entry.state === 'released') this.holds.delete(id)
    else this.holds.set(id, { ...entry })
    const out = followHold(previous, entry, origin, at, this.open, this.addCheck)
    this.markOpened(out, at)
    return out
  }

  /** Routes after a recompute (state as the dashboard shows it: held reads failed). */
  routes(views: readonly RouteView[], at: number): TrackerOutput {
    const out: TrackerOutput = { events: [], episodes: [] }
    const directions = new Map<string, DirectionViews>()
    for (const view of views) {
      const entity = routeEntity(view.provider, view.model, view.keyId)
      const previous = this.routeStates.get(entity) ?? 'healthy'
      if (previous !== view.state) out.events.push({ at, kind: 'route:state', entity, provider: view.provider, model: view.model, keyId: view.keyId, detail: { from: previous, to: view.state, held: view.held } })
      this.routeStates.set(entity, view.state)
      this.worstSince.saw(entity, view.state, view.held)
      const directionKey = directionEntity(view.provider, view.model)
      let direction = directions.get(directionKey)
      if (direction === undefined) directions.set(directionKey, (direction = { provider: view.provider, model: view.model, states: [], heldFailed: 0, keyIds: [] }))
      direction.states.push(view.state)
      direction.keyIds.push(view.keyId)
      if (view.held) direction.heldFailed++
      this.followRoute(view, at, out)
    }
    for (const [entity, direction] of directions) {
      const state = directionState(direction.states)
      const previous = this.directionStates.get(entity) ?? 'healthy'
      if (previous !== state) out.events.push({ at, kind: 'direction:state', entity, provider: direction.provider, model: direction.model, keyId: null, detail: { from: previous, to: state } })
      this.directionStates.set(entity, state)
      this.worstSince.saw(entity, state, false)
      const episode = this.open.get(entity)
      if (episode !== undefined) this.moveState(episode, state === 'failed' || state === 'healthy' ? state : 'recovering', at, out)
      // Every key failed and not all of them by a hold (a held key has its own incident).
      else if (state === 'failed' && direction.heldFailed < direction.states.length) this.openState(entity, 'failed', at, direction.provider, direction.model, direction.keyIds, out)
    }
    this.markOpened(out, at)
    return out
  }

  /** A request finished; returns the episodes it touched (requests failed, last traffic). Keeps nothing of `outcome`. */
  request(outcome: RequestOutcome): TrackerOutput {
    let out: TrackerOutput | null = null
    const at = outcome.at
    // With no episode open (the usual case) a request touches none: no entity key is built.
    const watching = this.open.size > 0
    for (const attempt of outcome.attempts) {
      const traffic = this.routeTraffic.at(attempt.provider, attempt.model, attempt.key_id)
      traffic.requests++
      const failureClass = attempt.failure_class !== null && countsAgainstKey(attempt.failure_class) ? attempt.failure_class : null
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
        // The latest failure leads a state episode's reasons (a hold's reasons are its hold's).
        if (failureClass !== null && episode.cause === 'state' && episode.reasons[episode.reasons.length - 1] !== failureClass) changed = noteReason(episode, failureClass, at) || changed
        if (changed) out = withEpisode(out, episode)
      }
    }
    const counting = countRequest(outcome)
    if (counting === null) return out ?? NOTHING
    const counts = this.countsOf(counting.provider, counting.model)
    const add = counting.add
    for (const field in add) counts[field as keyof DirectionCounts] += add[field as keyof DirectionCounts]!
    if (outcome.served !== null) {
      const run = this.runs.get(outcome.model)
      if (run !== undefined) out = this.servedAgain(outcome.model, run, at, out)
      return out ?? NOTHING
    }
    if (counting.noAlternative) out = this.failedAgain(outcome.model, at, out)
    if (!watching) return out ?? NOTHING
    // A failed request counts on every open episode it ran into, once: a route's state episode
    // inside its key's hold or its direction's episode is part of that problem (group.ts), so it is
    // not counted again there.
    const touched = new Set<Episode>()
    const candidates = outcome.attempts.length > 0 ? outcome.attempts : [{ provider: counting.provider, model: counting.model, key_id: '' }]
    for (const attempt of candidates) {
      const route = this.open.get(routeEntity(attempt.provider, attempt.model, attempt.key_id))
      const key = this.open.get(keyEntity(attempt.provider, attempt.key_id))
      const direction = this.open.get(directionEntity(attempt.provider, attempt.model))
      if (key !== undefined) touched.add(key)
      if (direction !== undefined) touched.add(direction)
      if (route !== undefined && (route.cause === 'hold' || (direction === undefined && key?.cause !== 'hold'))) touched.add(route)
    }
    for (const episode of touched) {
      episode.requestsFailed++
      if (counting.pinnedKeptFailed) episode.pinnedKeptFailed++
      if (counting.noAlternative) episode.failedNoAlternative++
      episode.updatedAt = at
      out = withEpisode(out, episode)
      if (this.open.takeFailedEvent(episode)) {
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
    return out ?? NOTHING
  }

  /** A request for `model` failed with nothing left to serve it: past a run of them, its open episodes learn the model is failing. */
  private failedAgain(model: string, at: number, out: TrackerOutput | null): TrackerOutput | null {
    let run = this.runs.get(model)
    if (run === undefined) this.runs.set(model, (run = { failed: 0, lastAt: at }))
    if (at - run.lastAt > RUN_GAP_MS) run.failed = 0
    run.failed++
    run.lastAt = at
    if (run.failed < NONE_LEFT_AFTER || this.open.size === 0) return out
    for (const episode of this.open.values()) {
      // Newer than the episode's own evidence only: a route gone to recovering since is marked again by failures after it.
      if (!this.concerns(episode, model) || (episode.noneLeftAt != null && episode.noneLeftAt >= (episode.recoveringSince ?? 0))) continue
      episode.noneLeftAt = at
      episode.updatedAt = at
      out = withEpisode(out, episode)
    }
    return out
  }

  /** A request for `model` was served: the run is over, and its open episodes learn it. */
  private servedAgain(model: string, run: FailingRun, at: number, out: TrackerOutput | null): TrackerOutput | null {
    const wasFailing = run.failed >= NONE_LEFT_AFTER
    this.runs.delete(model)
    if (!wasFailing) return out
    for (const episode of this.open.values()) {
      if (episode.noneLeftAt == null || !this.concerns(episode, model)) continue
      episode.noneLeftAt = null
      episode.updatedAt = at
      out = withEpisode(out, episode)
    }
    return out
  }

  /** Episodes opened by a hold or a recompute while their model is failing start out knowing it. */
  private markOpened(out: TrackerOutput, at: number): void {
    for (const episode of out.episodes) {
      if (episode.closedAt !== null || episode.openedAt !== at || episode.noneLeftAt != null) continue
      for (const [model, run] of this.runs) {
        if (run.failed >= NONE_LEFT_AFTER && at - run.lastAt <= RUN_GAP_MS && this.concerns(episode, model)) {
          episode.noneLeftAt = at
          break
        }
      }
    }
  }

  /** True when the episode is about `model`: a route or direction of it, or a whole key that serves it. */
  private concerns(episode: Episode, model: string): boolean {
    if (episode.scope !== 'key') return episode.models.includes(model)
    return this.routeStates.has(routeEntity(episode.provider, model, episode.keyIds[0] ?? ''))
  }

  /** The count row of a direction this minute, made the first time. */
  private countsOf(provider: string, model: string): Omit<CountRow, 'at'> {
    let byModel = this.counts.get(provider)
    if (byModel === undefined) this.counts.set(provider, (byModel = new Map()))
    let counts = byModel.get(model)
    if (counts === undefined) byModel.set(model, (counts = { served: 0, failed: 0, redirected: 0, fallbackServed: 0, routingPicked: 0, callerNamed: 0, keptFailing: 0, checks: 0, provider, model }))
    return counts
  }

  /** The per-minute count rows accumulated since the last call (non-empty directions only). */
  takeCounts(at: number): CountRow[] {
    const rows: CountRow[] = []
    for (const byModel of this.counts.values()) for (const counts of byModel.values()) rows.push({ ...counts, at })
    this.counts = new Map()
    return rows
  }

  /**
   * A snapshot row per route and per direction, with the traffic since the last snapshot and the
   * worst state it was in since then (at any recompute, or now): a route that failed and came
   * back between two snapshots reads failed, not the state it happened to be in at this instant.
   */
  snapshot(views: readonly RouteView[], at: number): SnapshotRow[] {
    const rows = snapshotRows(views, this.routeTraffic, this.worstSince, at)
    this.routeTraffic = new RouteTrafficTable()
    this.worstSince = new WorstSince()
    return rows
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
    if (episode !== undefined) this.moveState(episode, view.state, at, out)
    else if (view.state === 'degraded' || view.state === 'failed') this.openState(entity, view.state, at, view.provider, view.model, [view.keyId], out)
  }

  /** True when every tracked route of the key is healthy again (the released whole-key hold is over). */
  private keyRecovered(provider: string, keyId: string, current: RouteView): boolean {
    if (current.state !== 'healthy') return false
    const prefix = `route:${provider}:`
    const suffix = `:${keyId}`
    for (const [entity, state] of this.routeStates) if (entity.startsWith(prefix) && entity.endsWith(suffix) && state !== 'healthy') return false
    return true
  }

  /** Opens a state episode of a route or direction, its reasons the last failures of its keys' routes. */
  private openState(entity: string, state: 'failed' | 'degraded', at: number, provider: string, model: string, keyIds: readonly string[], out: TrackerOutput): void {
    const opened = this.open.start(entity, 'state', at, provider, model, null)
    opened.keyIds = [...keyIds]
    opened.worstState = opened.phase = state
    opened.action = state === 'failed' ? 'moved_traffic' : 'reduced_traffic'
    for (const keyId of keyIds) {
      const cause = this.lastFailure.get(routeEntity(provider, model, keyId))
      if (cause !== undefined && !opened.reasons.includes(cause)) opened.reasons.push(cause)
    }
    out.episodes.push(opened)
  }

  /** A state episode's route or direction is in `phase` now: the episode closes when healthy, else moves there. */
  private moveState(episode: Episode, phase: RouteState, at: number, out: TrackerOutput): void {
    if (phase === 'healthy') return this.open.close(episode, at, out)
    if (phase === episode.phase) return
    if (phase === 'recovering') episode.recoveringSince = at
    episode.phase = phase
    episode.worstState = worse(episode.worstState, phase)
    if (phase === 'failed') episode.action = 'moved_traffic'
    episode.updatedAt = at
    out.episodes.push(episode)
  }

  /** Counts a check this node sent (holds.ts `AddCheck`); a property, so it is handed on as it is. */
  private readonly addCheck = (entity: string, provider: string, model: string | null, outcome: string, at: number, out: TrackerOutput): void => {
    const episode = this.open.get(entity)
    if (episode !== undefined) {
      episode.checks++
      episode.checkOutcomes[outcome] = (episode.checkOutcomes[outcome] ?? 0) + 1
      episode.lastRequestAt = at
      episode.updatedAt = at
      withEpisode(out, episode)
    }
    this.countsOf(provider, model ?? '*').checks++
  }
}

/** `out` (made when null) with `episode` among its episodes, once. */
function withEpisode(out: TrackerOutput | null, episode: Episode): TrackerOutput {
  out ??= { events: [], episodes: [] }
  if (!out.episodes.includes(episode)) out.episodes.push(episode)
  return out
}
