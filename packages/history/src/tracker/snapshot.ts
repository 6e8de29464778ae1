/** The per-minute snapshot: a row per route and per direction, with the traffic since the last one. */
import type { RouteState } from '@switchboard/routing'
import { directionEntity, routeEntity } from '../entities.ts'
import { directionState, worse } from './episodes.ts'
import type { RouteView, SnapshotRow } from './types.ts'

/** Requests and errors a route served since the last snapshot. */
interface RouteTraffic {
  requests: number
  errors: number
}

/**
 * Traffic per route since the last snapshot, by provider, model and key: every request adds to
 * it, so it is looked up by the strings the request already has, never by a joined entity key.
 */
export class RouteTrafficTable {
  private readonly byProvider = new Map<string, Map<string, Map<string, RouteTraffic>>>()

  /** The route's traffic, made empty the first time. */
  at(provider: string, model: string, keyId: string): RouteTraffic {
    let byModel = this.byProvider.get(provider)
    if (byModel === undefined) this.byProvider.set(provider, (byModel = new Map()))
    let byKey = byModel.get(model)
    if (byKey === undefined) byModel.set(model, (byKey = new Map()))
    let traffic = byKey.get(keyId)
    if (traffic === undefined) byKey.set(keyId, (traffic = { requests: 0, errors: 0 }))
    return traffic
  }

  get(provider: string, model: string, keyId: string): RouteTraffic | undefined {
    return this.byProvider.get(provider)?.get(model)?.get(keyId)
  }
}

/**
 * The worst state each route and direction was in at the recomputes since the last snapshot
 * (every 5 s), and whether the route was held at any of them, by entity: a snapshot a minute
 * would otherwise catch a flapping route between a trial and its failure, and miss a failure
 * shorter than a minute.
 */
export class WorstSince extends Map<string, { state: RouteState; held: boolean }> {
  /** The entity was in `state` (held or not) at a recompute. */
  saw(entity: string, state: RouteState, held: boolean): void {
    const previous = this.get(entity)
    if (previous === undefined) this.set(entity, { state, held })
    else {
      previous.state = worse(previous.state, state)
      previous.held ||= held
    }
  }
}

/**
 * Snapshot rows of `views`: each route, then each direction (its keys' state, summed weight and
 * traffic, worst penalties); each row's state is the worst of its state now and the worst seen
 * since the last snapshot, and a route reads held if it was held at any point since.
 */
export function snapshotRows(views: readonly RouteView[], traffic: RouteTrafficTable, worstSince: WorstSince, at: number): SnapshotRow[] {
  const rows: SnapshotRow[] = []
  const directions = new Map<string, SnapshotRow & { states: RouteState[]; latencySum: number; latencyCount: number }>()
  for (const view of views) {
    const entity = routeEntity(view.provider, view.model, view.keyId)
    const served = traffic.get(view.provider, view.model, view.keyId) ?? { requests: 0, errors: 0 }
    const seen = worstSince.get(entity)
    const row: SnapshotRow = {
      at,
      entity,
      provider: view.provider,
      model: view.model,
      keyId: view.keyId,
      state: seen === undefined ? view.state : worse(view.state, seen.state),
      held: view.held || seen?.held === true,
      weight: view.weight,
      score: Math.max(0, Math.min(100, view.weight)),
      errorPenalty: view.parts.errorPenalty,
      latencyPenalty: view.parts.latencyPenalty,
      utilisation: view.parts.utilisation,
      recovery: view.parts.recoveryProgress,
      requests: served.requests,
      errors: served.errors,
      latencyMs: view.latencyMs,
    }
    rows.push(row)
    const directionKey = directionEntity(view.provider, view.model)
    let direction = directions.get(directionKey)
    if (direction === undefined) directions.set(directionKey, (direction = { ...row, entity: directionKey, keyId: null, held: true, weight: 0, score: 0, errorPenalty: 0, latencyPenalty: 0, utilisation: 0, recovery: 0, requests: 0, errors: 0, latencyMs: null, states: [], latencySum: 0, latencyCount: 0 }))
    direction.states.push(view.state)
    // The direction reads held only when every key is held now (a key held a while ago is its own row's).
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
    const now = directionState(states)
    const seen = worstSince.get(row.entity)
    rows.push({ ...row, state: seen === undefined ? now : worse(now, seen.state), latencyMs: latencyCount > 0 ? latencySum / latencyCount : null })
  }
  return rows
}
