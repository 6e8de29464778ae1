/** The per-minute snapshot: a row per route and per direction, with the traffic since the last one. */
import { directionEntity, routeEntity } from '../entities.ts'
import { directionState } from './episodes.ts'
import type { RouteView, SnapshotRow, State } from './types.ts'

/** Requests and errors a route served since the last snapshot. */
export interface RouteTraffic {
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

/** Snapshot rows of `views`: each route, then each direction (its keys' state, summed weight and traffic, worst penalties). */
export function snapshotRows(views: readonly RouteView[], traffic: RouteTrafficTable, at: number): SnapshotRow[] {
  const rows: SnapshotRow[] = []
  const directions = new Map<string, SnapshotRow & { states: State[]; latencySum: number; latencyCount: number }>()
  for (const view of views) {
    const entity = routeEntity(view.provider, view.model, view.keyId)
    const served = traffic.get(view.provider, view.model, view.keyId) ?? { requests: 0, errors: 0 }
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
      requests: served.requests,
      errors: served.errors,
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
  return rows
}
