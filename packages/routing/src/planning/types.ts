/** The vocabulary of request planning: what the planner reads, what a request brings, and the plans it returns. */
import type { AdaptiveBalancer } from '../adaptive/balancer.ts'
import type { DirectionReason } from '../adaptive/directions.ts'
import type { AffinityOutcome, SessionAffinity } from '../adaptive/session.ts'
import type { BalancerKey, Direction, LoadBalancerSettings, RouteRef } from '../adaptive/types.ts'
import type { TraceOrigin } from '../holds/entry.ts'
import type { Holds } from '../holds/holds.ts'
import type { RateLimitBackoffs } from './backoffs.ts'
import type { RoutingLog } from './log.ts'

/** What planning reads: this node's routing state, and the configured keys of each provider. */
export interface PlannerComponents {
  balancer: AdaptiveBalancer
  holds: Holds
  sessions: SessionAffinity
  backoffs: RateLimitBackoffs
  /** The keys of `provider` that serve `model`, in configured order; undefined when the provider is not configured. */
  keysFor(provider: string, model: string): readonly BalancerKey[] | undefined
}

/** A request as routing sees it, whatever surface it came in on. */
export interface PlanInput {
  /** The model, without a provider prefix. */
  model: string
  /** The provider the request named (`openai/gpt-4o`), if any. */
  pinnedProvider: string | undefined
  /** The request's own fallbacks, in its order. */
  fallbacks: readonly Direction[]
  sessionId: string | null
  /** The caller brought its own key (`x-bf-direct-key`). */
  directKey: boolean
  settings: LoadBalancerSettings
  now: number
  random: () => number
  log: RoutingLog
}

/** Why a target is in the plan. */
export type TargetSource =
  /** The provider the request named, or the first one routing chose for a bare model. */
  | 'primary'
  /** One of the request's own fallbacks. */
  | 'fallback'
  /** A healthy provider routing added behind the request's own targets. */
  | 'added'
  /** A provider held on every key, sent this request first as its check (healthy ones behind it). */
  | 'check'
  /** A provider failed on every key (on its metrics), sent this request first as the fleet's one trial (healthy ones behind it). */
  | 'trial'

/** One provider + model to try, with its own retry budget. */
export interface PlannedTarget extends Direction {
  source: TargetSource
  /** The caller's own key is used here (the first target routing sends to; never a fallback, never a check): nothing about its attempts is recorded against a key. */
  direct: boolean
  /** A key to try first: a check this plan claimed on it, or the session's key. */
  firstKeyId: string | undefined
  /** True when `firstKeyId` is a check this plan claimed (one attempt, then the key is done for the request). */
  firstIsCheck: boolean
  /** The session's own key, when its request was lent to a trial or a recovering key's probe first: tried next (issue 36, item 8). */
  sessionKeyId?: string
}

/** The providers of a request, in order, with the facts a recorder needs. */
export interface RequestPlan {
  /** Shared with other requests: read only. */
  targets: readonly PlannedTarget[]
  /** Index in `targets` of the primary: when every target fails, the caller gets its error. */
  primary: number
  /** Who chose the provider that serves first. */
  pickedBy: 'request' | 'routing' | 'session'
  /** Why the primary provider is the one it is. */
  reason: DirectionReason
  /** The provider the request named, when routing moved it off that provider, and why. */
  movedOff: { provider: string; reason: 'failed' | 'held' } | null
  /** The provider-level check this request claimed (a provider held on every key), if any. */
  check: RouteRef | null
  /** The provider-level trial this request took (a provider failed on every key), if any. */
  trial?: RouteRef | null
  session: AffinityOutcome
}

/** A key an attempt may not use, and until when (epoch ms: its due time or the end of its backoff). */
export interface KeyLeftOut {
  index: number
  keyId: string
  keyName: string
  /** Held, backed off, or failed while another key of the provider takes its trial. */
  reason: 'held' | 'backed_off' | 'failed'
  /** The key is dead for this request (held for a refusal that kills it: credential, quota, ...). */
  dead: boolean
  until: number
  /** A held key: the spans that placed its holds, for a trace to link to (plain data, passed along). */
  origins?: readonly TraceOrigin[]
}

/** The keys of one target: what its rotation draws from, in the provider's configured order. */
export interface KeyPlan {
  /** Rotation weight per key (shared with other requests: read only). */
  weights: readonly number[]
  /** Keys this request must not use. */
  leftOut: readonly KeyLeftOut[]
  /** Index of the key of the first attempt, or -1 for a weighted draw. */
  first: number
  /** Index of the key this request checks (or, with every key held, tries anyway), or -1: one attempt, then it is done for the request. */
  check: number
  /** The `check` key's attempt is its check on this node (claimed, or due): only then can a refusal renew its hold (issue 36, item 6). */
  checkDue: boolean
  /** The session's own key when the `check` key took the session's request: the next attempt goes there, so the session keeps its key. */
  then?: number
  /** Every key is held or backed off and none could be checked: sent anyway on `first`, once; its answer counts as a check only when that key is due. */
  everyKeyHeld: boolean
}

/** What planning the keys of one target reads besides the target. */
export type KeyPlanInput = Pick<PlanInput, 'settings' | 'now' | 'log'>
