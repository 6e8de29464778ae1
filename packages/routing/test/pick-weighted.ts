/**
 * The reference weighted draw: the key rotation's draw (src/retries/rotation.ts, over running
 * sums or over a subset in place) is checked against it, and bench/data-plane/selection.ts races it
 * as the baseline.
 */

/**
 * Picks an index among `weights` with probability proportional to its weight, using one draw
 * of `random` in [0, 1). Returns -1 when there is nothing to pick. Non-positive weights are
 * only picked when every weight is non-positive (then uniformly), so a key configured with
 * weight 0 still serves when it is the last one left.
 */
export function pickWeighted(weights: readonly number[], random: () => number): number {
  const count = weights.length
  if (count === 0) return -1
  if (count === 1) return 0
  let total = 0
  for (let index = 0; index < count; index++) {
    const weight = weights[index]!
    if (weight > 0) total += weight
  }
  if (total <= 0) return Math.min(count - 1, Math.floor(random() * count))
  let target = random() * total
  for (let index = 0; index < count; index++) {
    const weight = weights[index]!
    if (weight <= 0) continue
    target -= weight
    if (target < 0) return index
  }
  // Floating point can leave target at ~0 after the last positive weight.
  for (let index = count - 1; index >= 0; index--) if (weights[index]! > 0) return index
  return count - 1
}
