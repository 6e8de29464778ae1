/** Static weighted-random choice; the adaptive weights of later work feed the same function. */

/**
 * Picks an index among `weights` in proportion to its weight with one draw of `random` (-1 for
 * none); non-positive weights only when every weight is (then uniformly).
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

/** The first index whose running sum exceeds `target` (running sums non-decreasing); the last index when none does. */
export function firstAbove(cumulative: ArrayLike<number>, target: number): number {
  let low = 0
  let high = cumulative.length - 1
  while (low < high) {
    const middle = (low + high) >> 1
    if (cumulative[middle]! > target) high = middle
    else low = middle + 1
  }
  return low
}
