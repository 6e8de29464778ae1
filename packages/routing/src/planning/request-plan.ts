/**
 * Planning the providers of one request, as data: their order, who chose the first, the
 * provider-level check it claims, its session's outcome. Spec: reference/adaptive-load-balancing.txt
 * ("Configuration", "When every key is held") and reference/retries-and-fallbacks.txt.
 */
import { withDirections, type DirectionDecision } from '../adaptive/directions.ts'
import { applySessionAffinity, type AffinityOutcome } from '../adaptive/session.ts'
import { keyNamesModel, sameDirection, type Direction } from '../adaptive/types.ts'
import { providerCheckLine } from '../holds/log-lines.ts'
import { trialLine } from '../trials/log-lines.ts'
import type { PlannedTarget, PlannerComponents, PlanInput, RequestPlan, TargetSource } from './types.ts'

/** A bare model's provider order, by the selection table's shared, frozen fallback list (kept as long as the table). */
const preferred = new WeakMap<readonly Direction[], readonly Direction[]>()
const NO_DIRECTIONS: readonly Direction[] = Object.freeze([])
/** Targets planned once and shared (frozen, read only) by every request planned alike. */
interface SharedTargets {
  targets: readonly PlannedTarget[]
  primary: number
}
/**
 * Shared targets by what they depend on, kept as long as it: a table's fallback list (a bare model;
 * `byProvider`: a session kept on that provider), its `skipped` list (a request naming only its
 * provider, by provider), or a decision the balancer shares (frozen: pinned, or with fallbacks of its own).
 */
const sharedTargets = new WeakMap<object, { plain?: SharedTargets; byProvider?: Map<string, SharedTargets> }>()
/** A kept session's targets (its key first) per shared targets and session key. */
const sessionKeyTargets = new WeakMap<readonly PlannedTarget[], Map<string, readonly PlannedTarget[]>>()

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
  log.addDecision(decision)
  // A bare model with no fallbacks of its own: its targets depend only on the table's shared fallback list.
  const scored = pinnedProvider === undefined && configured.length === 0 && (decision.reason === 'scored' || decision.reason === 'scored_lower')

  // Check-a-held-provider-first (reference: "When every key is held"): with provider selection on,
  // never with the caller's own key, and for a pinned request only its own provider, when re-routed.
  let check: RequestPlan['check'] = null
  let trial: RequestPlan['check'] = null
  let checked: Direction | null = null
  const rerouted = decision.reason === 'pinned_rerouted' && decision.pinned !== null
  if (settings.direction_selection_enabled && !input.directKey) {
    let candidates: readonly Direction[] = NO_DIRECTIONS
    if (pinnedProvider === undefined) candidates = decision.skipped
    else if (rerouted && settings.reroute_failed_directions) candidates = [decision.pinned!]
    for (const candidate of candidates) {
      const keys = components.keysFor(candidate.provider, candidate.model)
      // A provider held on every key: its due key, claimed as this node's check.
      const due = everyKeyHeld(components, candidate.provider, candidate.model) ? keys!.find((key) => components.holds.claimCheck(candidate.provider, key.id, candidate.model, now)) : undefined
      // A provider failed on every key (on its metrics, not held): the fleet's one trial (issue 35, item 8), unless the request goes there anyway.
      const tried = due !== undefined || sameDirection(candidate, chosen) ? undefined : keys?.find((key) => balancer.takeTrial({ provider: candidate.provider, model: candidate.model, keyId: key.id }, now))
      const key = due ?? tried
      if (key === undefined) continue
      const route = { provider: candidate.provider, model: candidate.model }
      checked = candidate
      if (due !== undefined) log.check = check = { ...route, keyId: key.id }
      else log.trial = trial = { ...route, keyId: key.id }
      log.add(due !== undefined ? providerCheckLine({ ...route, key: key.name }) : trialLine({ ...route, key: key.name, wholeProvider: true }))
      break
    }
  }
  // A check or a trial: the first target is sent one attempt on that key, then the providers behind it.
  const probe = check ?? trial

  // Session affinity: keep the session on its provider and key while they are offered.
  let session: AffinityOutcome = 'none'
  let sessionKeyId: string | undefined
  let directions: readonly Direction[] | null = null
  const last = input.sessionId !== null && probe === null ? components.sessions.recall(input.sessionId, model, now) : undefined
  const bySession = last !== undefined && scored ? sharedTargets.get(decision.fallbacks)?.byProvider?.get(last.provider) : undefined
  if (last !== undefined && bySession !== undefined && balancer.isRouteOffered({ provider: last.provider, model, keyId: last.keyId })) {
    // The hot path of a session kept on its provider and key: the order was planned once per table.
    session = 'kept'
    log.session = 'kept'
    sessionKeyId = last.keyId
    log.addSession('kept')
  } else if (last !== undefined) {
    const ordered = orderedDirections(components, decision, configured, scored)
    const affinity = applySessionAffinity(withDirections(decision, ordered[0]!, ordered.slice(1)), last, (route) => balancer.isRouteOffered(route))
    session = affinity.outcome
    log.session = affinity.outcome
    if (affinity.outcome === 'kept') {
      directions = [affinity.decision.primary!, ...affinity.decision.fallbacks]
      sessionKeyId = affinity.preferKeyId
    }
    log.addSession(affinity.outcome)
  }

  let targets: readonly PlannedTarget[]
  let primary = 0
  // Pinned, no fallbacks of its own, nothing appended: the targets depend on the table (its `skipped` list is its own) and the provider.
  const pinnedAlone = pinnedProvider !== undefined && configured.length === 0 && probe === null && directions === null && decision.appended.length === 0 && (decision.reason === 'pinned' || decision.reason === 'pinned_failed_kept' || decision.reason === 'pinned_no_alternative') && decision.primary?.provider === pinnedProvider
  // What the targets depend on when they can be shared, and the provider within it (see sharedTargets).
  let shareBy: object | null = null
  let shareProvider: string | undefined
  if (probe === null && scored) {
    shareBy = decision.fallbacks
    if (session === 'kept') shareProvider = last!.provider
  } else if (pinnedAlone) {
    shareBy = decision.skipped
    shareProvider = pinnedProvider
  } else if (directions === null && probe === null && Object.isFrozen(decision)) shareBy = decision
  let known = session === 'kept' ? bySession : undefined
  if (known === undefined && shareBy !== null) {
    const shares = sharedTargets.get(shareBy)
    known = shareProvider === undefined ? shares?.plain : shares?.byProvider?.get(shareProvider)
  }
  if (known !== undefined) {
    // The hot path: planned once (per table, provider or decision), shared by every request until the next build.
    targets = known.targets
    primary = known.primary
  } else {
    directions ??= orderedDirections(components, decision, configured, scored)
    if (checked !== null) directions = [checked, ...directions.filter((direction) => !sameDirection(direction, checked))]
    const built = buildTargets(components, directions, pinnedProvider ?? chosen.provider, model, configured, probe, trial !== null)
    targets = built.targets
    primary = built.primary
    // A bare model's targets are shared only when they lead with the provider they were planned for.
    if (shareBy !== null && (!scored || built.targets[0]?.provider === (shareProvider ?? chosen.provider))) {
      targets = Object.freeze(built.targets.map((target) => Object.freeze({ ...target })))
      let shares = sharedTargets.get(shareBy)
      if (shares === undefined) sharedTargets.set(shareBy, (shares = {}))
      if (shareProvider === undefined) shares.plain = { targets, primary }
      else (shares.byProvider ??= new Map()).set(shareProvider, { targets, primary })
    }
  }
  const keptTargets = session === 'kept' && probe === null && !input.directKey && sessionKeyId !== undefined && Object.isFrozen(targets) ? sessionKeyTargets.get(targets)?.get(sessionKeyId) : undefined
  if (keptTargets !== undefined) {
    // A kept session's targets with its key first, built once per shared plan and key.
    targets = keptTargets
  } else if (targets.length > 0 && (probe !== null || sessionKeyId !== undefined || input.directKey)) {
    // The first target carries what is this request's own: its check or trial, its session's key, the caller's key.
    const first: PlannedTarget = { ...targets[0]! }
    if (probe !== null) {
      first.firstKeyId = probe.keyId
      first.firstIsCheck = true
    } else if (sessionKeyId !== undefined) first.firstKeyId = sessionKeyId
    // The caller's key goes where the request is first routed, never to a check: with a direct key no check is planned.
    if (input.directKey) first.direct = true
    // Built element by element: a slice of a frozen array is slow to write into on V8.
    const copy: PlannedTarget[] = [first]
    for (let index = 1; index < targets.length; index++) copy.push(targets[index]!)
    if (session === 'kept' && probe === null && !input.directKey && sessionKeyId !== undefined && Object.isFrozen(targets)) {
      // Bounded by the provider's keys (a session's key is one of them).
      Object.freeze(first)
      let byKey = sessionKeyTargets.get(targets)
      if (byKey === undefined) sessionKeyTargets.set(targets, (byKey = new Map()))
      byKey.set(sessionKeyId, Object.freeze(copy))
    }
    targets = copy
  }
  const pickedBy: RequestPlan['pickedBy'] = session === 'kept' ? 'session' : pinnedProvider !== undefined && !rerouted ? 'request' : 'routing'
  const movedOff = rerouted && probe === null ? { provider: pinnedProvider!, reason: everyKeyHeld(components, pinnedProvider!, model) ? ('held' as const) : ('failed' as const) } : null
  const plan: RequestPlan = { targets, primary, pickedBy, reason: decision.reason, movedOff, check, trial, session }
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
  isTrial: boolean,
): { targets: PlannedTarget[]; primary: number } {
  const targets: PlannedTarget[] = []
  let primary = -1
  for (const direction of directions) {
    if (components.keysFor(direction.provider, direction.model) === undefined) continue
    let source: TargetSource
    // A trial is never the request's primary: a re-routed request's is the provider routing chose.
    if (check !== null && targets.length === 0 && sameDirection(direction, check) && (isTrial || direction.provider !== primaryProvider)) source = isTrial ? 'trial' : 'check'
    else if (primary < 0 && direction.provider === primaryProvider && direction.model === model) source = 'primary'
    else if (configured.length > 0 && configured.some((fallback) => sameDirection(fallback, direction))) source = 'fallback'
    else source = 'added'
    if (source === 'primary') primary = targets.length
    targets.push({ provider: direction.provider, model: direction.model, source, direct: false, firstKeyId: undefined, firstIsCheck: false })
  }
  // A re-routed request's primary is the provider routing chose (the named one is not in the list).
  if (primary < 0) {
    primary = targets.findIndex((target) => target.source !== 'check' && target.source !== 'trial')
    if (primary >= 0) targets[primary]!.source = 'primary'
    else primary = 0
  }
  return { targets, primary }
}

/** True when every key of the provider that serves the model is held (not only failed on its metrics). */
function everyKeyHeld(components: PlannerComponents, provider: string, model: string): boolean {
  const keys = components.keysFor(provider, model)
  return keys !== undefined && keys.length > 0 && keys.every((key) => components.holds.isHeld(provider, key.id, model))
}

/** True when some key of the direction's provider names its model (not just `"*"`). */
function namesModel(components: PlannerComponents, direction: Direction): boolean {
  return components.keysFor(direction.provider, direction.model)?.some((key) => keyNamesModel(key, direction.model)) ?? false
}

/**
 * Without a model catalog, a key with `models: ["*"]` cannot say which models its provider
 * really has: a provider whose keys name the model beats a wildcard-only one. The request's
 * own fallbacks are kept as given.
 */
function preferNamingProviders(components: PlannerComponents, directions: Direction[], configured: readonly Direction[]): Direction[] {
  const naming = directions.filter((direction) => namesModel(components, direction)).length
  if (naming === 0 || naming === directions.length) return directions
  const kept = directions.filter((direction) => namesModel(components, direction) || configured.some((fallback) => sameDirection(fallback, direction)))
  return kept.length > 0 ? kept : directions
}
