/**
 * One hold, as the fleet replicates it, keyed by (provider, key id, model); a null model holds the
 * whole key. A released hold stays a while as a tombstone, so the release wins over older copies
 * and a key a served request released can resume its rung (reference: "How long a key is held").
 */
import type { HoldReason } from '../failures/failure-class.ts'
import type { Version } from './clock.ts'

/** What ended a hold. Only `served` and `settled` let a new hold of the same reason resume the rung. */
export type ReleaseCause =
  /** A request (a check, or one pinned to the key) was served. */
  | 'served'
  /** A request got a refusal that can only come after the held question was settled in the key's favour. */
  | 'settled'
  /** An operator released it through the API or the dashboard. */
  | 'operator'
  /** The key was edited or rotated. */
  | 'key_edit'
  /** The key or its provider was deleted. */
  | 'deleted'

/** The trace span that placed a hold (W3C ids, lower-case hex), so a request elsewhere that skips the key can link to it. */
export interface TraceOrigin {
  /** 32 hex digits. */
  traceId: string
  /** 16 hex digits. */
  spanId: string
}

/** A hold or its tombstone, exactly as it is gossiped, merged and snapshotted. */
export interface HoldEntry {
  provider: string
  keyId: string
  /** The held model; null holds the whole key, for every model. */
  model: string | null
  /** `released` entries are tombstones: out of every query, kept only to win merges and resume rungs. */
  state: 'held' | 'released'
  reason: HoldReason
  /** The provider's own words from the refusal that placed or last renewed the hold. */
  message: string
  /** When this hold started (epoch ms); kept across checks that renew it. */
  since: number
  /** When the current wait started: the refusal, or the check answer that renewed the hold. */
  waitStartedAt: number
  /** The wait before any node's jitter, in ms. */
  baseWaitMs: number
  /** Where the wait came from: the ladder (each node varies it by ±10 %) or the provider (used as given). */
  waitSource: 'ladder' | 'provider'
  /** Ladder step: the wait is 30 s × 2^rung, up to the reason's cap. Shared by the fleet. */
  rung: number
  /** How many answers have renewed the hold since it started. */
  checks: number
  /** For a tombstone: when and why it was released. Null while held. */
  releasedAt: number | null
  releaseCause: ReleaseCause | null
  version: Version
  /** The span of the attempt whose refusal placed the hold, when the placing node traces; kept across renewals. Not part of the entry's identity (digests, tie-breaks). */
  origin?: TraceOrigin
}

/** The identity of a hold: which key, and which model of it (null = the whole key). */
export type HoldTarget = Pick<HoldEntry, 'provider' | 'keyId' | 'model'>

/** A stable string id for a hold target; used as the map key and in digests. */
export function holdId(target: HoldTarget): string {
  // JSON keeps the parts apart whatever characters names contain; null and "null" differ.
  return JSON.stringify([target.provider, target.keyId, target.model])
}

/** How the clear API names a dropped hold (reference: "Releasing held keys"): its key id, or its route `openai:lb-identifier:gpt-4o:lb-identifier:key-id`. */
export function clearedName(target: HoldTarget): string {
  return target.model === null ? target.keyId : [target.provider, target.model, target.keyId].join(':lb-identifier:')
}

/**
 * How far along the provider got before refusing (credential, then account and model, then rate
 * limit): a refusal further along than the held one settles it in the key's favour (reference:
 * "Checking a held key again").
 */
const REFUSAL_STAGE: Record<HoldReason, number> = {
  credential: 0,
  quota: 1,
  model_access: 1,
  model_gone: 1,
  region_blocked: 1,
  rate_limit: 2,
}

/** True when a `refusal` answer settles a hold for `held` in the key's favour. */
export function settlesInFavour(refusal: HoldReason, held: HoldReason): boolean {
  return REFUSAL_STAGE[refusal] > REFUSAL_STAGE[held]
}

/** Stable text of an entry, every field in a fixed order: for digests and for breaking version ties. */
export function canonicalEntry(entry: HoldEntry): string {
  // The origin is tracing metadata: a copy restored without it is the same hold.
  const { version, origin: _origin, ...rest } = entry
  const keys = Object.keys(rest).sort() as (keyof typeof rest)[]
  return JSON.stringify([keys.map((key) => [key, rest[key]]), version.wallMs, version.counter, version.nodeId])
}
