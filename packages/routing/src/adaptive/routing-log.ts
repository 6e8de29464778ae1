/**
 * The routing log of one request as structured entries: which provider and key were chosen and
 * why, which were skipped and why. The gateway renders each entry as a sentence; build them only
 * when someone reads the log (the decisions themselves carry everything, at no cost).
 */
import type { DirectionDecision, DirectionReason } from './directions.ts'
import type { KeyDecision, KeyReason } from './keys.ts'
import type { AffinityOutcome } from './session.ts'
import type { KeySkipReason } from './tables.ts'
import type { Direction } from './types.ts'

/** One fact of the routing log. */
export type RoutingLogEntry =
  | { kind: 'provider_chosen'; provider: string; model: string; reason: DirectionReason; score: number | null; pinned: Direction | null }
  | { kind: 'provider_skipped'; provider: string; model: string; reason: 'failed' }
  | { kind: 'fallback_pruned'; provider: string; model: string; reason: 'failed' }
  | { kind: 'fallbacks_appended'; targets: readonly Direction[] }
  | { kind: 'session'; outcome: AffinityOutcome }
  | { kind: 'key_chosen'; provider: string; model: string; keyId: string; keyName: string; reason: KeyReason; weight: number; share: number }
  | { kind: 'key_none'; provider: string; model: string; reason: KeyReason }
  | { kind: 'key_skipped'; provider: string; model: string; keyId: string; keyName: string; reason: KeySkipReason }

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

/** The entries of a key decision on one direction. */
export function keyLog(target: Direction, decision: KeyDecision): RoutingLogEntry[] {
  const entries: RoutingLogEntry[] = []
  if (decision.keyId !== null) {
    entries.push({
      kind: 'key_chosen',
      provider: target.provider,
      model: target.model,
      keyId: decision.keyId,
      keyName: decision.keyName ?? decision.keyId,
      reason: decision.reason,
      weight: decision.weight,
      share: decision.share,
    })
  } else entries.push({ kind: 'key_none', provider: target.provider, model: target.model, reason: decision.reason })
  for (const skipped of decision.skipped) {
    entries.push({ kind: 'key_skipped', provider: target.provider, model: target.model, keyId: skipped.keyId, keyName: skipped.keyName, reason: skipped.reason })
  }
  return entries
}
