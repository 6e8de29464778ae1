/**
 * The routing log of one request as structured entries: which provider was chosen, which skipped,
 * and why. Build them only when someone reads the log (the decisions carry everything anyway).
 */
import type { DirectionDecision, DirectionReason } from './directions.ts'
import type { AffinityOutcome } from './session.ts'
import type { Direction } from './types.ts'

/** One fact of the routing log. */
export type RoutingLogEntry =
  | { kind: 'provider_chosen'; provider: string; model: string; reason: DirectionReason; score: number | null; pinned: Direction | null }
  | { kind: 'provider_skipped'; provider: string; model: string; reason: 'failed' }
  | { kind: 'fallback_pruned'; provider: string; model: string; reason: 'failed' }
  | { kind: 'fallbacks_appended'; targets: readonly Direction[] }
  | { kind: 'session'; outcome: AffinityOutcome }

/** The entries of a provider decision (and what session affinity did to it, if anything). */
export function directionLog(decision: DirectionDecision, affinity?: AffinityOutcome): RoutingLogEntry[] {
  const entries: RoutingLogEntry[] = []
  if (decision.primary !== null) {
    entries.push({ kind: 'provider_chosen', provider: decision.primary.provider, model: decision.primary.model, reason: decision.reason, score: decision.score, pinned: decision.pinned })
  }
  for (const target of decision.skipped) entries.push({ kind: 'provider_skipped', provider: target.provider, model: target.model, reason: 'failed' })
  for (const target of decision.pruned) entries.push({ kind: 'fallback_pruned', provider: target.provider, model: target.model, reason: 'failed' })
  if (decision.appended.length > 0) entries.push({ kind: 'fallbacks_appended', targets: decision.appended })
  if (affinity !== undefined && affinity !== 'none') entries.push({ kind: 'session', outcome: affinity })
  return entries
}
