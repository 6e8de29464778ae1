/**
 * Level 1: which provider serves a request, and which fallbacks follow it, under the five switches
 * (each outcome is a `DirectionReason`). Spec: reference/adaptive-load-balancing.txt,
 * "Configuration" and "Scope & Limitations".
 */
import { drawDirection, type ModelTable } from './tables.ts'
import { sameDirection, type LoadBalancerSettings, type Direction } from './types.ts'

/** Why the primary provider is the one it is, as the routing log says it. */
export const DIRECTION_REASONS = {
  scored: 'the best-scored provider for the model',
  scored_lower: 'a healthy provider with a smaller share, drawn so it keeps being measured',
  all_failed: 'every provider serving the model is failed; sending to the first anyway',
  static: 'provider selection is off: the first configured provider serving the model',
  pinned: 'the provider the request named',
  pinned_failed_kept: 'the provider the request named is failed, and re-routing is off: kept on it (a healthy provider serves the model)',
  pinned_rerouted: 'the provider the request named is failed: re-routed to the best healthy provider',
  pinned_no_alternative: 'the provider the request named is failed, and no healthy provider serves the model: kept on it',
  no_provider: 'no configured provider serves the model',
} as const

/** Why the primary provider is the one it is. */
export type DirectionReason = keyof typeof DIRECTION_REASONS

/** The provider decision of one request, with everything the routing log needs. */
export interface DirectionDecision {
  primary: Direction | null
  fallbacks: readonly Direction[]
  reason: DirectionReason
  /** The direction the request named, if it named a provider. */
  pinned: Direction | null
  /** Fallbacks the balancer added behind the configured ones. */
  appended: readonly Direction[]
  /** Configured fallbacks dropped because they are failed. */
  pruned: readonly Direction[]
  /** Providers serving the model that were left out because every key is failed or held. */
  skipped: readonly Direction[]
  /** The primary direction's score on the weight scale; null when it has no table. */
  score: number | null
}

/** What a request brings to provider selection. */
export interface DirectionOptions {
  /** The provider the request named (`openai/gpt-4o`), if any. */
  pinnedProvider?: string
  /** The request's own fallbacks, in its order. */
  configuredFallbacks?: readonly Direction[]
  settings: LoadBalancerSettings
  /** Draws the provider by its share of the scores; without it the best is always chosen. */
  random?: () => number
}

const NONE: readonly Direction[] = Object.freeze([])

/**
 * Decisions `handled` made, per table (they live as long as it), by primary, then compared on what
 * else they depend on. Shared (frozen) by every request that asks the same; bounded, since
 * callers choose their fallbacks.
 */
const handledDecisions = new WeakMap<ModelTable, Map<string, HandledDecision[]>>()
const MAX_HANDLED_PER_TABLE = 256
/** The most shared decisions compared per request (one primary): past it, decided per request. */
const MAX_HANDLED_PER_PRIMARY = 16

/** A shared decision and what it was made from (compared field by field: no key string to build per request). */
interface HandledDecision {
  reason: DirectionReason
  pinnedProvider: string | null
  prune: boolean
  /** Providers of the configured fallbacks, in order (all for the table's model). */
  configured: readonly string[]
  decision: DirectionDecision
}

function sameInputs(entry: HandledDecision, reason: DirectionReason, pinned: Direction | null, prune: boolean, configured: readonly Direction[]): boolean {
  if (entry.reason !== reason || entry.prune !== prune || entry.pinnedProvider !== (pinned === null ? null : pinned.provider) || entry.configured.length !== configured.length) return false
  for (let index = 0; index < configured.length; index++) if (entry.configured[index] !== configured[index]!.provider) return false
  return true
}

/**
 * The decision with another primary and fallbacks. Spelled out rather than `{ ...decision, ... }`:
 * on Node 20 each property added after a spread costs about 0.4 us, and this runs per request.
 */
export function withDirections(decision: DirectionDecision, primary: Direction | null, fallbacks: readonly Direction[], reason: DirectionReason = decision.reason): DirectionDecision {
  return { primary, fallbacks, reason, pinned: decision.pinned, appended: decision.appended, pruned: decision.pruned, skipped: decision.skipped, score: decision.score }
}

/** Decides the primary provider and fallbacks of one request; `tableOf` gives another model's table (to prune its fallbacks). */
export function decideDirection(table: ModelTable, options: DirectionOptions, tableOf: (model: string) => ModelTable): DirectionDecision {
  const { pinnedProvider, settings } = options
  const configured = options.configuredFallbacks ?? NONE
  const model = table.model
  const skipped = table.failedTargets

  if (pinnedProvider !== undefined) {
    const pinned: Direction = { provider: pinnedProvider, model }
    const direction = table.byProvider.get(pinnedProvider)
    const pinnedFailed = direction?.failedDirection ?? false
    // Kept on a failed provider: avoidable only when another provider serving the model is not failed (issue 36, item 4).
    const keptReason = !pinnedFailed ? 'pinned' : table.ranked.length > 0 ? 'pinned_failed_kept' : 'pinned_no_alternative'
    const score = direction?.score ?? null
    if (settings.direction_selection_enabled && pinnedFailed && settings.reroute_failed_directions) {
      if (table.ranked.length === 0) return handled(table, pinned, 'pinned_no_alternative', pinned, configured, settings, tableOf, score)
      const best = table.ranked[drawDirection(table, options.random)]!
      return handled(table, { provider: best.provider, model }, 'pinned_rerouted', pinned, configured, settings, tableOf, best.score)
    }
    if (settings.direction_selection_enabled && settings.append_fallbacks_to_pinned) {
      return handled(table, pinned, keptReason, pinned, configured, settings, tableOf, score)
    }
    return { primary: pinned, fallbacks: configured, reason: keptReason, pinned, appended: NONE, pruned: NONE, skipped, score }
  }

  if (table.directions.length === 0) {
    return { primary: null, fallbacks: configured, reason: 'no_provider', pinned: null, appended: NONE, pruned: NONE, skipped, score: null }
  }
  if (!settings.direction_selection_enabled) {
    const first = table.directions[0]!
    return { primary: { provider: first.provider, model }, fallbacks: configured, reason: 'static', pinned: null, appended: NONE, pruned: NONE, skipped, score: first.score }
  }
  if (table.ranked.length === 0) {
    const first = table.directions[0]!
    return handled(table, { provider: first.provider, model }, 'all_failed', null, configured, settings, tableOf, first.score)
  }
  const index = drawDirection(table, options.random)
  const best = table.ranked[index]!
  const reason = index < table.tieCount ? 'scored' : 'scored_lower'
  if (configured.length === 0) {
    // The hot path: every list here is precomputed by the table.
    const fallbacks = table.fallbacksAfter[index]!
    return { primary: { provider: best.provider, model }, fallbacks, reason, pinned: null, appended: fallbacks, pruned: NONE, skipped, score: best.score }
  }
  return handled(table, { provider: best.provider, model }, reason, null, configured, settings, tableOf, best.score)
}

/** A request Level 1 handles in full: configured fallbacks normalised (failed ones pruned when on), healthy providers appended. */
function handled(
  table: ModelTable,
  primary: Direction,
  reason: DirectionReason,
  pinned: Direction | null,
  configured: readonly Direction[],
  settings: LoadBalancerSettings,
  tableOf: (model: string) => ModelTable,
  score: number | null,
): DirectionDecision {
  // Fallbacks naming another model read that model's table: not shared.
  const shareable = configured.every((fallback) => fallback.model === table.model)
  const prune = settings.prune_failed_fallbacks
  let known: Map<string, HandledDecision[]> | undefined
  if (shareable) {
    known = handledDecisions.get(table)
    const entries = known?.get(primary.provider)
    if (entries !== undefined) for (const entry of entries) if (sameInputs(entry, reason, pinned, prune, configured)) return entry.decision
  }
  const fallbacks: Direction[] = []
  const pruned: Direction[] = []
  for (const fallback of configured) {
    if (sameDirection(fallback, primary) || fallbacks.some((kept) => sameDirection(kept, fallback))) continue
    const fallbackTable = fallback.model === table.model ? table : tableOf(fallback.model)
    if (prune && fallbackTable.byProvider.get(fallback.provider)?.failedDirection === true) {
      pruned.push(fallback)
      continue
    }
    fallbacks.push(fallback)
  }
  const appended: Direction[] = []
  for (const direction of table.ranked) {
    const target: Direction = { provider: direction.provider, model: table.model }
    if (sameDirection(target, primary) || fallbacks.some((kept) => sameDirection(kept, target))) continue
    appended.push(target)
    fallbacks.push(target)
  }
  const decision: DirectionDecision = { primary, fallbacks, reason, pinned, appended, pruned: pruned.length > 0 ? pruned : NONE, skipped: table.failedTargets, score }
  if (!shareable) return decision
  if (known === undefined) handledDecisions.set(table, (known = new Map()))
  let size = 0
  for (const entries of known.values()) size += entries.length
  if (size < MAX_HANDLED_PER_TABLE) {
    for (const frozen of [...fallbacks, primary, pinned, fallbacks, appended, pruned]) if (frozen !== null) Object.freeze(frozen)
    const entry: HandledDecision = { reason, pinnedProvider: pinned === null ? null : pinned.provider, prune, configured: configured.map((fallback) => fallback.provider), decision: Object.freeze(decision) }
    const entries = known.get(primary.provider)
    if (entries === undefined) known.set(primary.provider, [entry])
    else if (entries.length < MAX_HANDLED_PER_PRIMARY) entries.push(entry)
  }
  return decision
}
