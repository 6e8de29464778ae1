/**
 * Precomputed selection tables, one per model: its directions ranked by score, and each one's keys
 * and weights. Rebuilt off the hot path, which only reads them (reference: "Zero-overhead design").
 */
import type { RouteMetrics } from './metrics.ts'
import { firstAbove } from '../selection/weighted.ts'
import { keyServesModel, type BalancerKey, type BalancerProvider, type HeldPredicate, type Direction } from './types.ts'
import { settledWeight } from './scoring.ts'
import { DIRECTION_MIN_SHARE, DIRECTION_SHARPNESS, DIRECTION_TIE_MARGIN, WEIGHT_MAX } from './tuning.ts'

/** Per-key weights for the rotation module, in the direction's key order (0 when held, or when failed for adaptive). */
export interface RotationWeights {
  keyIds: readonly string[]
  weights: readonly number[]
  /** Keys held (or backed off) when the table was built (ascending): a request asks about these keys only, none when empty (holds and backoffs are announced, and rebuild the table). */
  heldIndexes: readonly number[]
  /** Keys failed on their metrics and not held (ascending; adaptive only): a request asks whether it is one's trial. */
  failedIndexes: readonly number[]
  /** Keys recovering (ascending; adaptive weights only): a request asks whether one is due a request (RECOVERY_PROBE_IDLE_MS). */
  recoveringIndexes: readonly number[]
}

/** One direction (provider + model) and its keys that serve the model, in configured order. */
export interface DirectionTable {
  provider: string
  model: string
  keys: readonly BalancerKey[]
  /** What a request's key rotation draws from, built once per table so requests allocate none (adaptive weights: 0 when failed or held). */
  rotation: { adaptive: RotationWeights; static: RotationWeights }
  /** Key id -> its index in `keys`. */
  keyIndex: ReadonlyMap<string, number>
  /** The sum of the adaptive weights (keys neither held nor failed): a key's expected share is its weight over this. */
  adaptiveTotal: number
  /** Every key that serves the model is failed or held (reference: "When every key is held"). */
  failedDirection: boolean
  /** The expected weight of the key an adaptive pick returns, sum(w^2)/sum(w); 0 when failed. */
  score: number
  /** The score once its recovering keys have recovered (`settledWeight`); the score itself when none is recovering. */
  settledScore: number
  /** How far its recovering keys have come: the sum of their weights now over the sum once recovered, in (0, 1]; 1 when none is recovering. */
  recovery: number
}

/** Everything selection needs for one model. */
export interface ModelTable {
  model: string
  /** Directions serving the model, in configured provider order. */
  directions: readonly DirectionTable[]
  byProvider: ReadonlyMap<string, DirectionTable>
  /** Directions not failed, best score first (ties keep configured order). */
  ranked: readonly DirectionTable[]
  /** How many of `ranked` are within DIRECTION_TIE_MARGIN of the best: equally healthy. */
  tieCount: number
  /** The share of requests naming no provider that each of `ranked` gets; sums to 1. */
  shares: readonly number[]
  /** For ranked[i]: the other ranked directions, best first. */
  fallbacksAfter: readonly (readonly Direction[])[]
  /** Cumulative `shares`, for a one-draw pick. */
  shareCumulative: readonly number[]
  /** Directions left out because every key is failed or held. */
  failedTargets: readonly Direction[]
  /** The recompute cycle this table was last read in, to drop idle tables. */
  usedCycle: number
  /** The holds version the held flags were read at. */
  holdsVersion: number
}

export const NO_INDEXES: readonly number[] = Object.freeze([])

/** Builds one direction's table from the keys, their routes' metrics and the holds. */
export function buildDirectionTable(
  provider: string,
  model: string,
  keys: readonly BalancerKey[],
  metricsOf: (keyId: string) => RouteMetrics | undefined,
  isHeld: HeldPredicate,
): DirectionTable {
  const keyIds: string[] = []
  const adaptiveWeights: number[] = []
  // Static weights keep sending failed keys their share: any of those requests served recovers them, no trial needed.
  const staticWeights: number[] = []
  const heldIndexes: number[] = []
  const failedIndexes: number[] = []
  const recoveringIndexes: number[] = []
  let adaptiveTotal = 0
  let squares = 0
  let settledTotal = 0
  let settledSquares = 0
  keys.forEach((key, index) => {
    const metrics = metricsOf(key.id)
    const isKeyHeld = isHeld(provider, key.id, model)
    // A key never sent a request has no metrics: healthy at full weight (optimistic cold start).
    const isKeyFailed = metrics !== undefined && metrics.state === 'failed'
    keyIds.push(key.id)
    staticWeights.push(isKeyHeld ? 0 : key.weight)
    if (isKeyHeld) heldIndexes.push(index)
    else if (isKeyFailed) failedIndexes.push(index)
    const weight = isKeyHeld || isKeyFailed ? 0 : (metrics?.weight ?? WEIGHT_MAX)
    adaptiveWeights.push(weight)
    if (isKeyHeld || isKeyFailed) return
    adaptiveTotal += Math.max(0, weight)
    squares += weight * weight
    const settled = Math.max(0, metrics === undefined ? WEIGHT_MAX : settledWeight(metrics))
    settledTotal += settled
    settledSquares += settled * settled
    if (metrics?.state === 'recovering') recoveringIndexes.push(index)
  })
  for (const indexes of [heldIndexes, failedIndexes, recoveringIndexes]) Object.freeze(indexes)
  return {
    provider,
    model,
    keys,
    rotation: {
      adaptive: { keyIds, weights: adaptiveWeights, heldIndexes, failedIndexes, recoveringIndexes },
      static: { keyIds, weights: staticWeights, heldIndexes, failedIndexes: NO_INDEXES, recoveringIndexes: NO_INDEXES },
    },
    keyIndex: new Map(keys.map((key, index) => [key.id, index])),
    adaptiveTotal,
    failedDirection: keys.length > 0 && heldIndexes.length + failedIndexes.length === keys.length,
    score: adaptiveTotal > 0 ? squares / adaptiveTotal : 0,
    settledScore: settledTotal > 0 ? settledSquares / settledTotal : 0,
    recovery: settledTotal > 0 ? Math.min(1, adaptiveTotal / settledTotal) : 1,
  }
}

/** Builds the table of one model across every provider that has a key serving it. */
export function buildModelTable(
  model: string,
  providers: readonly BalancerProvider[],
  metricsOf: (provider: string, keyId: string) => RouteMetrics | undefined,
  isHeld: HeldPredicate,
  cycle: number,
  holdsVersion: number,
): ModelTable {
  const directions: DirectionTable[] = []
  const byProvider = new Map<string, DirectionTable>()
  for (const entry of providers) {
    const keys = entry.keys.filter((key) => keyServesModel(key, model))
    if (keys.length === 0) continue
    const table = buildDirectionTable(entry.provider, model, keys, (keyId) => metricsOf(entry.provider, keyId), isHeld)
    directions.push(table)
    byProvider.set(entry.provider, table)
  }
  // Array.prototype.sort is stable, so equal scores keep the configured order.
  const ranked = directions.filter((table) => !table.failedDirection).sort((left, right) => right.score - left.score)
  const best = ranked[0]?.score ?? 0
  let tieCount = 0
  while (tieCount < ranked.length && ranked[tieCount]!.score >= best - DIRECTION_TIE_MARGIN) tieCount++
  const targets: Direction[] = ranked.map((table) => Object.freeze({ provider: table.provider, model }))
  const fallbacksAfter = targets.map((_, index) => Object.freeze(targets.filter((_, other) => other !== index)))
  const shares = directionShares(ranked.map((table) => table.settledScore), ranked.map((table) => table.recovery))
  let running = 0
  const shareCumulative = shares.map((share) => (running += share))
  const failedTargets = directions.filter((table) => table.failedDirection).map((table) => ({ provider: table.provider, model }))
  return { model, directions, byProvider, ranked, tieCount, shares, shareCumulative, fallbacksAfter, failedTargets, usedCycle: cycle, holdsVersion }
}

/**
 * Each direction's share: proportional to (score / max) ^ DIRECTION_SHARPNESS, at least
 * DIRECTION_MIN_SHARE each (when they all fit). A recovering direction is scored as once recovered,
 * times `recovery`, how far its ramp has come (issue 36, item 8).
 */
export function directionShares(scores: readonly number[], recoveries?: readonly number[]): number[] {
  if (scores.length === 0) return []
  const raw = scores.map((score, index) => Math.pow(Math.max(0, score) / WEIGHT_MAX, DIRECTION_SHARPNESS) * (recoveries?.[index] ?? 1))
  const rawTotal = raw.reduce((sum, value) => sum + value, 0)
  if (rawTotal <= 0) return scores.map(() => 1 / scores.length)
  const lifted = raw.map((value) => value / rawTotal < DIRECTION_MIN_SHARE)
  const liftedCount = lifted.filter(Boolean).length
  if (liftedCount * DIRECTION_MIN_SHARE >= 1) return scores.map(() => 1 / scores.length)
  const restTotal = raw.reduce((sum, value, index) => (lifted[index] ? sum : sum + value), 0)
  const rest = 1 - liftedCount * DIRECTION_MIN_SHARE
  return raw.map((value, index) => (lifted[index] ? DIRECTION_MIN_SHARE : (value / restTotal) * rest))
}

/** Picks one of a model's ranked directions by its share, with one draw; the best without a random source. */
export function drawDirection(table: ModelTable, random: (() => number) | undefined): number {
  const count = table.ranked.length
  if (count <= 1 || random === undefined) return 0
  return firstAbove(table.shareCumulative, random())
}
