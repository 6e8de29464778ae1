/**
 * What a node records: events (every change routing made or saw), episodes (this node's view
 * of one problem on one entity, grouped across nodes into incidents when read), per-minute
 * snapshots of routes and directions, and per-minute request counts per direction.
 */
import type { RouteSnapshot, RouteState } from '@switchboard/routing'
import type { Scope } from '../entities.ts'

/** Kinds of history event. */
export type EventKind =
  | 'route:state'
  | 'direction:state'
  | 'hold:placed'
  | 'hold:checked'
  | 'hold:released'
  | 'request:failed'
  | 'key:edited'
  | 'key:deleted'
  | 'provider:edited'
  | 'provider:deleted'
  | 'settings:changed'

/** One recorded event. `detail` carries the kind's own fields (from/to/cause, before/after ...). */
export interface HistoryEvent {
  at: number
  kind: EventKind
  entity: string
  provider: string | null
  model: string | null
  keyId: string | null
  detail: Record<string, unknown>
}

/** A row stamped with the node that recorded it. */
export type Stamped<Row> = Row & { nodeId: string; region: string }

/** Why a hold ended, as history names it (design.md: `check | operator | edit | delete`). */
export type ReleaseBy = 'check' | 'operator' | 'edit' | 'delete'

/** What routing did about a problem. */
export type Action = 'held' | 'moved_traffic' | 'reduced_traffic'

/** Where an episode stands on its node. */
export type Phase = 'held' | 'failed' | 'degraded' | 'recovering' | 'closed'

/** One node's view of one problem on one entity. */
export interface Episode {
  id: string
  entity: string
  scope: Scope
  provider: string
  models: string[]
  keyIds: string[]
  /** `hold` episodes follow a held key; `state` episodes a route or direction its metrics failed or degraded. */
  cause: 'hold' | 'state'
  phase: Phase
  openedAt: number
  closedAt: number | null
  updatedAt: number
  worstState: RouteState
  /** Failure classes seen, the latest evidence last. */
  reasons: string[]
  action: Action
  /** Checks this node sent, and what they answered. */
  checks: number
  checkOutcomes: Record<string, number>
  requestsFailed: number
  pinnedKeptFailed: number
  /** Failed requests routing had nothing else to send to (not one a setting could have moved). */
  failedNoAlternative: number
  /**
   * When requests for the episode's model last failed in a row on this node with nothing left to
   * serve them (issue 36, item 1); null while none did, or once one was served again.
   */
  noneLeftAt?: number | null
  /** When the latest of `reasons` (the last one) was last seen: the cause the incident leads with. */
  reasonAt?: number
  /** The hold started from a refusal this node saw (false: a peer saw it and the fleet shared the hold). */
  sawRefusal: boolean
  /** The provider's own words, when a hold quotes them. */
  message: string | null
  /** Last time a request reached the entity on this node. */
  lastRequestAt: number | null
  /** When the episode went to recovering (waiting for traffic is measured from here). */
  recoveringSince: number | null
  releasedBy: ReleaseBy | null
  /** Set when the node restarted or stopped before the episode closed. */
  lost: boolean
}

/** One route (key on a model) as a snapshot records it: the balancer's view of it, the fields history reads. */
export type RouteView = Pick<RouteSnapshot, 'provider' | 'model' | 'keyId' | 'keyName' | 'state' | 'held' | 'weight' | 'errorRate' | 'latencyMs' | 'parts'>

/** A per-minute snapshot row of a route (keyId set) or a direction (keyId null). */
export interface SnapshotRow {
  at: number
  entity: string
  provider: string
  model: string
  keyId: string | null
  /** The worst state since the previous snapshot (at any recompute, or at this one). */
  state: RouteState
  /** Held at any recompute since the previous snapshot, or now. */
  held: boolean
  weight: number
  /** 0-100: the weight on the balancer's fixed 0-100 scale. */
  score: number
  errorPenalty: number
  latencyPenalty: number
  utilisation: number
  recovery: number
  requests: number
  errors: number
  latencyMs: number | null
}

/** Per-minute request counts of one direction (reference overview: "Requests saved ... failed"). */
export interface DirectionCounts {
  served: number
  /** Failed, not counting caller faults and cancels. */
  failed: number
  /** Moved off a failing provider by routing. */
  redirected: number
  /** Served by a fallback routing added (not the caller's own). */
  fallbackServed: number
  /** The provider was picked by routing (the request named none). */
  routingPicked: number
  /** The caller named the provider. */
  callerNamed: number
  /** Kept on a failing provider because re-routing was off, and failed. */
  keptFailing: number
  checks: number
}

/** A count row as written: one minute, one direction, one node. */
export interface CountRow extends DirectionCounts {
  at: number
  provider: string
  model: string
}

/** What one input to a node's tracker produced. */
export interface TrackerOutput {
  events: HistoryEvent[]
  /** Episodes opened, changed or closed: upsert them. */
  episodes: Episode[]
}
