/**
 * Level 2: which key of a provider serves a request. Adaptive weights by default, static weights
 * with key selection off; held keys are skipped either way (reference: "Configuration").
 */
import { pickWeighted } from '../selection/weighted.ts'
import { drawFromPool, type DirectionTable, type KeyPool, type SkippedKey } from './tables.ts'

/** Why this key, or why none. */
export type KeyReason =
  /** Drawn by adaptive weight among the keys neither failed nor held. */
  | 'adaptive'
  /** Key selection is off: drawn by static weight among the keys not held. */
  | 'static'
  /** The session's key, kept because it is still offered. */
  | 'session'
  /** Every key not held is failed: one of them is sent anyway rather than refusing the request. */
  | 'last_resort_failed'
  /** Every key that could serve is held: the held-keys logic decides whether one is checked. */
  | 'all_held'
  /** Every key left was excluded by the caller (already dead for this request). */
  | 'all_excluded'
  /** No key of the provider serves the model. */
  | 'no_keys'

/** The key decision of one attempt, with what the routing log needs. */
export interface KeyDecision {
  keyId: string | null
  keyName: string | null
  reason: KeyReason
  /** The weight it was drawn with. */
  weight: number
  /** Its probability in the draw (1 for a session key or a single candidate). */
  share: number
  skipped: readonly SkippedKey[]
}

/** What an attempt brings to key selection. */
export interface KeyOptions {
  /** Keys already dead for this request. */
  exclude?: ReadonlySet<string>
  /** `route_selection_enabled`; default on. */
  routeSelectionEnabled?: boolean
  /** The session's key, kept when it is still eligible. */
  preferKeyId?: string
}

const NONE: readonly SkippedKey[] = Object.freeze([])

function none(reason: KeyReason, skipped: readonly SkippedKey[]): KeyDecision {
  return { keyId: null, keyName: null, reason, weight: 0, share: 0, skipped }
}

/** A chosen key; `total` and `count` describe the draw it won (all weights zero: a uniform draw). */
function chosen(table: DirectionTable, index: number, reason: KeyReason, weight: number, total: number, count: number, skipped: readonly SkippedKey[]): KeyDecision {
  const key = table.keys[index]!
  const share = total > 0 ? weight / total : 1 / count
  return { keyId: key.id, keyName: key.name, reason, weight, share, skipped }
}

/** Decides the key of one attempt on one direction; `table` undefined means the provider has no key for the model. */
export function decideKey(table: DirectionTable | undefined, random: () => number, options: KeyOptions = {}): KeyDecision {
  if (table === undefined || table.keys.length === 0) return none('no_keys', NONE)
  const adaptive = options.routeSelectionEnabled !== false
  const keyPool = adaptive ? table.adaptive : table.static
  const weights = adaptive ? table.adaptiveWeights : table.staticWeights
  const skipped = adaptive ? table.skippedAdaptive : table.skippedStatic
  const exclude = options.exclude
  const reason = adaptive ? 'adaptive' : 'static'

  if (options.preferKeyId !== undefined && (exclude === undefined || !exclude.has(options.preferKeyId))) {
    for (const index of keyPool.indexes) {
      if (table.keys[index]!.id === options.preferKeyId) return chosen(table, index, 'session', weights[index]!, 0, 1, skipped)
    }
  }

  if (exclude === undefined || exclude.size === 0) {
    const index = drawFromPool(keyPool, random)
    if (index >= 0) return chosen(table, index, reason, weights[index]!, keyPool.total, keyPool.indexes.length, skipped)
    if (adaptive) {
      const fallback = drawFromPool(table.lastResort, random)
      if (fallback >= 0) return chosen(table, fallback, 'last_resort_failed', table.staticWeights[fallback]!, table.lastResort.total, table.lastResort.indexes.length, skipped)
    }
    return none('all_held', skipped)
  }

  const excluded: SkippedKey[] = [...skipped]
  for (const key of table.keys) if (exclude.has(key.id)) excluded.push({ keyId: key.id, keyName: key.name, reason: 'excluded' })
  const picked = drawExcluding(table, keyPool, weights, exclude, random)
  if (picked !== null) return chosen(table, picked.index, reason, weights[picked.index]!, picked.total, picked.count, excluded)
  if (adaptive) {
    const fallback = drawExcluding(table, table.lastResort, table.staticWeights, exclude, random)
    if (fallback !== null) return chosen(table, fallback.index, 'last_resort_failed', table.staticWeights[fallback.index]!, fallback.total, fallback.count, excluded)
  }
  // Nothing left that is not held: say so when a held key is what stands in the way.
  const heldLeft = table.held.some((held, index) => held && !exclude.has(table.keys[index]!.id))
  return none(heldLeft ? 'all_held' : 'all_excluded', excluded)
}

/** A weighted draw from a pool with some keys excluded: the slow path, taken only on retries. */
function drawExcluding(
  table: DirectionTable,
  keyPool: KeyPool,
  weights: readonly number[],
  exclude: ReadonlySet<string>,
  random: () => number,
): { index: number; total: number; count: number } | null {
  const indexes: number[] = []
  const candidateWeights: number[] = []
  let total = 0
  for (const index of keyPool.indexes) {
    if (exclude.has(table.keys[index]!.id)) continue
    indexes.push(index)
    candidateWeights.push(weights[index]!)
    total += Math.max(0, weights[index]!)
  }
  const picked = pickWeighted(candidateWeights, random)
  return picked < 0 ? null : { index: indexes[picked]!, total, count: indexes.length }
}
