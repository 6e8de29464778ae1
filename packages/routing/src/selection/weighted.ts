/** Weighted-random choice over running sums of the weights. */

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
