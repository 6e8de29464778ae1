/** The per-minute snapshot: a row per route and per direction, with the traffic since the last one. */
import { directionEntity, routeEntity } from '../entities.ts'
import { directionState } from './episodes.ts'
import type { RouteView, SnapshotRow, State } from './types.ts'

/** Requests and errors a route served since the last snapshot. */
export interface RouteTraffic {
  requests: number
  errors: number
}

/** Snapshot rows of `views`: each route, then each direction (its keys' state, summed weight and traffic, worst penalties). */
export function snapshotRows(views: readonly RouteView[], traffic: ReadonlyMap<string, RouteTraffic>, at: number): SnapshotRow[] {
  const rows: SnapshotRow[] = []
  const directions = new Map<string, SnapshotRow & { states: State[]; latencySum: number; latencyCount: number }>()
  for (const view of views) {
    const entity = routeEntity(view.provider, view.model, view.keyId)
    const served = traffic.get(entity) ?? { requests: 0, errors: 0 }
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
