/**
 * Planning one request, as data: which providers to try in which order, and per provider which
 * keys an attempt may use, which are left out and why, and which check this request claims.
 * The gateway sends what the plan says and records it; it decides nothing. Pure: time and
 * randomness come in with the request; the only state touched is this node's check slots.
 * Spec: reference/adaptive-load-balancing.txt ("Configuration", "Held Keys", "When every key
 * is held") and reference/retries-and-fallbacks.txt.
 */
import type { AdaptiveBalancer } from '../adaptive/balancer.ts'
import { withDirections, type DirectionDecision, type DirectionReason } from '../adaptive/directions.ts'
import { directionLog } from '../adaptive/routing-log.ts'
import type { AffinityOutcome, SessionAffinity } from '../adaptive/session.ts'
import { applySessionAffinity } from '../adaptive/session.ts'
import type { RotationWeights } from '../adaptive/tables.ts'
import { keyNamesModel, type BalancerKey, type Direction, type LoadBalancerSettings } from '../adaptive/types.ts'
import { killsKeyForRequest } from '../failures/failure-class.ts'
import type { Holds } from '../holds/holds.ts'
import { checkLine, everyKeyHeldLine, providerCheckLine, skipLine } from '../holds/log-lines.ts'
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

/** One provider + model to try, with its own retry budget. */
export interface PlannedTarget extends Direction {
  source: TargetSource
  /** The caller's own key is used here (the first target routing sends to; never a fallback, never a check). */
  direct: boolean
  /** A key to try first: a check this plan claimed on it, or the session's key. */
  firstKeyId: string | undefined
  /** True when `firstKeyId` is a check this plan claimed (one attempt, then the key is done for the request). */
  firstIsCheck: boolean
}

/** Who chose the provider that serves first. */
export type PickedBy = 'request' | 'routing' | 'session'

/** The providers of a request, in order, with the facts a recorder needs. */
export interface RequestPlan {
  /** Shared with other requests: read only. */
  targets: readonly PlannedTarget[]
  /** Index in `targets` of the primary: when every target fails, the caller gets its error. */
  primary: number
  pickedBy: PickedBy
  /** Why the primary provider is the one it is. */
  reason: DirectionReason
  /** The provider the request named, when routing moved it off that provider, and why. */
  movedOff: { provider: string; reason: 'failed' | 'held' } | null
  /** The provider-level check this request claimed (a provider held on every key), if any. */
  check: { provider: string; model: string; keyId: string } | null
  session: AffinityOutcome
}

/** Why a key is left out of an attempt. */
export type KeyLeftOutReason = 'held' | 'backed_off'

/** A key an attempt may not use, and until when (epoch ms: its due time or the end of its backoff). */
export interface KeyLeftOut {
  index: number
  keyId: string
  keyName: string
  reason: KeyLeftOutReason
  /** The key is dead for this request (held for a refusal that kills it: credential, quota, ...). */
  dead: boolean
  until: number
}

/** The keys of one target: what its rotation draws from, in the provider's configured order. */
export interface KeyPlan {
  /** Rotation weight per key (shared with other requests: read only). */
  weights: readonly number[]
  /** Keys this request must not use. */
  leftOut: readonly KeyLeftOut[]
  /** Index of the key of the first attempt, or -1 for a weighted draw. */
  first: number
  /** Index of the key this request checks, or -1: one attempt, then it is done for the request. */
  check: number
  /** Every key is held or backed off and none is due: sent anyway on `first`, whose answer counts as a check. */
  everyKeyHeld: boolean
}

const NO_LEFT_OUT: readonly KeyLeftOut[] = Object.freeze([])

/**
 * Plans that depend only on a selection table's shared, frozen fallback lists (a bare model with no
 * fallbacks of its own), kept per list: a table is rebuilt every 5 s and on every change of keys or
 * holds, so an entry lives as long as the table that made it, and goes with it.
 */
const preferred = new WeakMap<readonly Direction[], readonly Direction[]>()
const planned = new WeakMap<readonly Direction[], readonly PlannedTarget[]>()
/** The same for a session kept on its provider, by that provider. */
const sessionPlanned = new WeakMap<readonly Direction[], Map<string, readonly PlannedTarget[]>>()
const NO_DIRECTIONS: readonly Direction[] = Object.freeze([])

/** Plans the providers of one request. Returns null when no configured provider serves the model. */
export function planRequest(components: PlannerComponents, input: PlanInput): RequestPlan | null {
  const { balancer } = components
  const { model, pinnedProvider, settings, log, now } = input
  const configured = input.fallbacks.length === 0 ? NO_DIRECTIONS : input.fallbacks
  let decision = balancer.selectDirection(model, { pinnedProvider, configuredFallbacks: configured, settings, random: input.random })
  if (decision.primary === null) {
    if (pinnedProvider === undefined) return null
    decision = withDirections(decision, { provider: pinnedProvider, model }, decision.fallbacks, 'pinned')
  }
  const chosen = decision.primary!
  log.decision = decision
  if (log.enabled) log.addEntries(directionLog(decision))
  // A bare model with no fallbacks of its own: its targets depend only on the table's shared fallback list.
  const scored = pinnedProvider === undefined && configured.length === 0 && (decision.reason === 'scored' || decision.reason === 'scored_lower')

  // Check-a-held-provider-first (reference: "When every key is held"). Only when provider selection is
  // on, never with the caller's own key, and for a pinned request only its own provider, only when
  // re-routing is on: a request pinned to a healthy provider is never sent elsewhere first.
  let check: RequestPlan['check'] = null
  let checked: Direction | null = null
  const rerouted = decision.reason === 'pinned_rerouted' && decision.pinned !== null
  if (settings.direction_selection_enabled && !input.directKey) {
    let candidates: readonly Direction[] = NO_DIRECTIONS
    if (pinnedProvider === undefined) candidates = decision.skipped
    else if (rerouted && settings.reroute_failed_directions) candidates = [decision.pinned!]
    for (const candidate of candidates) {
      const due = claimProviderCheck(components, candidate, now)
      if (due === undefined) continue
      check = { provider: candidate.provider, model: candidate.model, keyId: due.id }
      checked = candidate
      log.check = check
      log.add(providerCheckLine({ provider: candidate.provider, model: candidate.model, key: due.name }))
      break
    }
  }

  // Session affinity: keep the session on its provider and key while they are offered.
  let session: AffinityOutcome = 'none'
  let sessionKeyId: string | undefined
  let directions: readonly Direction[] | null = null
  const last = input.sessionId !== null && check === null ? components.sessions.recall(input.sessionId, model, now) : undefined
  const bySession = last !== undefined && scored ? sessionPlanned.get(decision.fallbacks)?.get(last.provider) : undefined
  if (last !== undefined && bySession !== undefined && bySession[0]!.provider === last.provider && balancer.isRouteOffered({ provider: last.provider, model, keyId: last.keyId })) {
    // The hot path of a session kept on its provider and key: the order was planned once per table.
    session = 'kept'
    log.session = 'kept'
    sessionKeyId = last.keyId
    if (log.enabled) log.addEntries([{ kind: 'session', outcome: 'kept' }])
  } else if (last !== undefined) {
    const ordered = orderedDirections(components, decision, configured, scored)
    const affinity = applySessionAffinity(withDirections(decision, ordered[0]!, ordered.slice(1)), last, (route) => balancer.isRouteOffered(route))
    session = affinity.outcome
    log.session = affinity.outcome
    if (affinity.outcome === 'kept') {
      directions = [affinity.decision.primary!, ...affinity.decision.fallbacks]
      sessionKeyId = affinity.preferKeyId
    }
    if (log.enabled) log.addEntries(directionLog(affinity.decision, affinity.outcome).filter((entry) => entry.kind === 'session'))
  }

  let targets: readonly PlannedTarget[]
  let primary = 0
  const reusable = scored && check === null && session !== 'kept'
  const known = reusable ? planned.get(decision.fallbacks) : undefined
  if (known !== undefined && known[0]!.provider === chosen.provider) {
    // The hot path: planned once per table, shared (read only) by every request until the next build.
    targets = known
  } else if (bySession !== undefined && session === 'kept') {
    targets = bySession
    primary = Math.max(0, bySession.findIndex((target) => target.source === 'primary'))
  } else {
    directions ??= orderedDirections(components, decision, configured, scored)
    if (checked !== null) directions = [checked, ...directions.filter((direction) => direction.provider !== checked.provider || direction.model !== checked.model)]
    const built = buildTargets(components, directions, pinnedProvider ?? chosen.provider, model, configured, check)
    targets = built.targets
    primary = built.primary
    if (reusable && primary === 0 && built.targets[0]?.provider === chosen.provider) {
      targets = Object.freeze(built.targets.map((target) => Object.freeze({ ...target })))
      planned.set(decision.fallbacks, targets)
    } else if (scored && check === null && session === 'kept' && last !== undefined && built.targets[0]?.provider === last.provider) {
      targets = Object.freeze(built.targets.map((target) => Object.freeze({ ...target })))
      let byProvider = sessionPlanned.get(decision.fallbacks)
      if (byProvider === undefined) sessionPlanned.set(decision.fallbacks, (byProvider = new Map()))
      byProvider.set(last.provider, targets)
    }
  }
  if (targets.length > 0 && (check !== null || sessionKeyId !== undefined || input.directKey)) {
    // The first target carries what is this request's own: its check, its session's key, the caller's key.
    const first: PlannedTarget = { ...targets[0]! }
    if (check !== null) {
      first.firstKeyId = check.keyId
      first.firstIsCheck = true
    } else if (sessionKeyId !== undefined) first.firstKeyId = sessionKeyId
    // The caller's key goes where the request is first routed, never to a check: with a direct key no check is planned.
    if (input.directKey) first.direct = true
    // Built element by element: a slice of a frozen array is slow to write into on V8.
    const copy: PlannedTarget[] = [first]
    for (let index = 1; index < targets.length; index++) copy.push(targets[index]!)
    targets = copy
  }
  const pickedBy: PickedBy = session === 'kept' ? 'session' : pinnedProvider !== undefined && !rerouted ? 'request' : 'routing'
  const movedOff = rerouted && check === null ? { provider: pinnedProvider!, reason: decision.skipped.some((skipped) => skipped.provider === pinnedProvider) ? ('held' as const) : ('failed' as const) } : null
  const plan: RequestPlan = { targets, primary, pickedBy, reason: decision.reason, movedOff, check, session }
  log.plan = plan
  return plan
}

/** The decision's primary then fallbacks; for a bare model, providers whose keys name the model first (remembered per table). */
function orderedDirections(components: PlannerComponents, decision: DirectionDecision, configured: readonly Direction[], scored: boolean): readonly Direction[] {
  const chosen = decision.primary!
  if (decision.pinned !== null) return [chosen, ...decision.fallbacks]
  const known = scored ? preferred.get(decision.fallbacks) : undefined
  if (known !== undefined && known[0]!.provider === chosen.provider) return known
  const directions = preferNamingProviders(components, [chosen, ...decision.fallbacks], configured)
  if (scored && directions[0] === chosen) preferred.set(decision.fallbacks, Object.freeze(directions))
  return directions
}

/** The targets of `directions` the node has a provider for, each with where it came from, and the primary's index. */
function buildTargets(
  components: PlannerComponents,
  directions: readonly Direction[],
  primaryProvider: string,
  model: string,
  configured: readonly Direction[],
  check: RequestPlan['check'],
): { targets: PlannedTarget[]; primary: number } {
  const targets: PlannedTarget[] = []
  let primary = -1
  for (const direction of directions) {
    if (components.keysFor(direction.provider, direction.model) === undefined) continue
    let source: TargetSource
    if (check !== null && targets.length === 0 && direction.provider === check.provider && direction.model === check.model && direction.provider !== primaryProvider) source = 'check'
    else if (primary < 0 && direction.provider === primaryProvider && direction.model === model) source = 'primary'
    else if (configured.length > 0 && configured.some((fallback) => fallback.provider === direction.provider && fallback.model === direction.model)) source = 'fallback'
    else source = 'added'
    if (source === 'primary') primary = targets.length
    targets.push({ provider: direction.provider, model: direction.model, source, direct: false, firstKeyId: undefined, firstIsCheck: false })
  }
  // A re-routed request's primary is the provider routing chose (the named one is not in the list).
  if (primary < 0) {
    primary = targets.findIndex((target) => target.source !== 'check')
    if (primary >= 0) targets[primary]!.source = 'primary'
    else primary = 0
  }
  return { targets, primary }
}

/** The due key of a provider held on every key for the model, claimed as this node's check; undefined when none. */
function claimProviderCheck(components: PlannerComponents, direction: Direction, now: number): BalancerKey | undefined {
  const keys = components.keysFor(direction.provider, direction.model)
  if (keys === undefined || keys.length === 0) return undefined
  const holds = components.holds
  for (const key of keys) if (!holds.isHeld(direction.provider, key.id, direction.model)) return undefined
  for (const key of keys) if (holds.claimCheck(direction.provider, key.id, direction.model, now)) return key
  return undefined
}

/** How long a session with warm history waits past a key's due time before it takes the check itself. */
export const SESSION_CHECK_GRACE_MS = 5_000

/** What planning the keys of one target reads besides the target. */
export interface KeyPlanInput {
  settings: LoadBalancerSettings
  now: number
  log: RoutingLog
}

/**
 * Plans the keys of one target: the rotation weights, the held and backed-off keys left out, and
 * the check this request claims. A due key is checked by the first request that could use it;
 * a request keeping its session's key takes a due check only once the key has waited
 * SESSION_CHECK_GRACE_MS past due, so traffic made only of sessions still checks it. With every
 * key held or backed off and none due, the request goes anyway on the key due soonest, and that
 * one attempt counts as the check.
 */
export function planKeys(components: PlannerComponents, target: PlannedTarget, keys: readonly BalancerKey[], input: KeyPlanInput): KeyPlan {
  const { balancer, holds, backoffs } = components
  const { provider, model } = target
  const { now, log } = input
  const table = balancer.rotationWeights(provider, model, input.settings.route_selection_enabled)
  const weights = alignWeights(keys, table)
  // The hot path: the table, rebuilt whenever holds or backoffs change, saw no key held or backed off.
  if (table !== undefined && table.heldCount === 0 && weights === table.weights) {
    const first = target.firstKeyId === undefined ? -1 : indexOfKey(keys, target.firstKeyId)
    return { weights, leftOut: NO_LEFT_OUT, first, check: target.firstIsCheck ? first : -1, everyKeyHeld: false }
  }
  let leftOut: KeyLeftOut[] | null = null
  let first = target.firstKeyId === undefined ? -1 : indexOfKey(keys, target.firstKeyId)
  let check = target.firstIsCheck ? first : -1
  const session = first >= 0 && check < 0
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!
    const backedOffUntil = backoffs.backedOffUntil(provider, key.id, model, now)
    const held = holds.isHeld(provider, key.id, model)
    if (!held && backedOffUntil === 0) continue
    if (index === check) continue
    // A session keeping its key lets others take the check first: it claims only once the key is GRACE past due.
    if (held && check < 0 && holds.claimCheck(provider, key.id, model, session ? now - SESSION_CHECK_GRACE_MS : now)) {
      first = index
      check = index
      log.check = { provider, model, keyId: key.id }
      log.add(checkLine({ provider, model, key: key.name }))
      continue
    }
    // The session's own key is held or backed off now: it is left out like any other.
    if (index === first) first = -1
    ;(leftOut ??= []).push(leftOutKey(components, provider, model, key, index, held, backedOffUntil))
  }
  if (leftOut === null) return { weights, leftOut: NO_LEFT_OUT, first, check, everyKeyHeld: false }
  if (leftOut.length === keys.length) {
    // Every key is held or backed off and none is due: send anyway on the one due soonest; only that attempt counts.
    let soonest = leftOut[0]!
    for (const candidate of leftOut) if (candidate.until < soonest.until) soonest = candidate
    log.add(everyKeyHeldLine({ provider, model, key: soonest.keyName }))
    const others = leftOut.filter((candidate) => candidate !== soonest)
    if (log.recording) noteSkipped(components, log, provider, model, others)
    if (holds.isHeld(provider, soonest.keyId, model)) log.check ??= { provider, model, keyId: soonest.keyId }
    return { weights, leftOut: others, first: soonest.index, check: holds.isHeld(provider, soonest.keyId, model) ? soonest.index : -1, everyKeyHeld: true }
  }
  log.add(skipLine({ provider, model, skipped: leftOut.length, total: keys.length }))
  if (log.recording) noteSkipped(components, log, provider, model, leftOut)
  return { weights, leftOut, first, check, everyKeyHeld: false }
}

/** Leaves the keys left out in the request's log, for the request log's routing summary. */
function noteSkipped(components: PlannerComponents, log: RoutingLog, provider: string, model: string, leftOut: readonly KeyLeftOut[]): void {
  for (const key of leftOut) {
    const reason = key.reason === 'backed_off' ? 'rate_limit_window' : (components.holds.holdsOn(provider, key.keyId, model)[0]?.entry.reason ?? 'held')
    ;(log.skipped ??= []).push({ provider, model, keyId: key.keyId, keyName: key.keyName, reason })
  }
}

function leftOutKey(components: PlannerComponents, provider: string, model: string, key: BalancerKey, index: number, held: boolean, backedOffUntil: number): KeyLeftOut {
  if (!held) return { index, keyId: key.id, keyName: key.name, reason: 'backed_off', dead: false, until: backedOffUntil }
  let until = 0
  let dead = false
  for (const route of components.holds.holdsOn(provider, key.id, model)) {
    until = Math.max(until, route.dueAt)
    if (killsKeyForRequest(route.entry.reason)) dead = true
  }
  return { index, keyId: key.id, keyName: key.name, reason: 'held', dead, until: Math.max(until, backedOffUntil) }
}

function indexOfKey(keys: readonly BalancerKey[], keyId: string): number {
  for (let index = 0; index < keys.length; index++) if (keys[index]!.id === keyId) return index
  return -1
}

/**
 * The rotation weights of `keys`: the balancer's shared array when it lists the same keys in the
 * same order (the usual case: both keep configured order), else looked up by key id, with the
 * configured weight for a key the balancer does not know yet.
 */
function alignWeights(keys: readonly BalancerKey[], table: RotationWeights | undefined): readonly number[] {
  if (table !== undefined && table.keyIds.length === keys.length) {
    let same = true
    for (let index = 0; index < keys.length; index++) {
      if (table.keyIds[index] !== keys[index]!.id) {
        same = false
        break
      }
    }
    if (same) return table.weights
  }
  return keys.map((key) => {
    const index = table === undefined ? -1 : table.keyIds.indexOf(key.id)
    return index < 0 ? key.weight : table!.weights[index]!
  })
}

/** True when some key of the direction's provider names its model (not just `"*"`). */
function namesModel(components: PlannerComponents, direction: Direction): boolean {
  const keys = components.keysFor(direction.provider, direction.model)
  if (keys === undefined) return false
  for (const key of keys) if (keyNamesModel(key, direction.model)) return true
  return false
}

/**
 * Without a model catalog, a key with `models: ["*"]` cannot say which models its provider
 * really has: a provider whose keys name the model beats a wildcard-only one. The request's
 * own fallbacks are kept as given.
 */
function preferNamingProviders(components: PlannerComponents, directions: Direction[], configured: readonly Direction[]): Direction[] {
  let naming = 0
  for (const direction of directions) if (namesModel(components, direction)) naming++
  if (naming === 0 || naming === directions.length) return directions
  const kept = directions.filter((direction) => namesModel(components, direction) || configured.some((fallback) => fallback.provider === direction.provider && fallback.model === direction.model))
  return kept.length > 0 ? kept : directions
}
