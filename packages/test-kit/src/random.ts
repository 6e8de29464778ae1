/**
 * A seeded source of uniform numbers in [0, 1) (mulberry32): the same draws every run, so a test,
 * a bench or the chaos run writes the same data and makes the same choices each time.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = Math.imul(state ^ (state >>> 15), state | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }
}
