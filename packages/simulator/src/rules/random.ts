import type { LatencySpec } from '../index.ts'

/** A seeded source of uniform numbers in [0, 1) (mulberry32: tiny, fast, good enough for faults). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let mixed = state
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1)
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61)
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296
  }
}

/** z-score of the 99th percentile of a standard normal distribution. */
const z99 = 2.3263

/** Draws one latency in ms; `{p50, p99}` is a log-normal with that median and 99th percentile, upstream latency's usual shape. */
export function sampleLatency(spec: LatencySpec, random: () => number): number {
  if (typeof spec === 'number') return spec
  if ('mean' in spec) {
    return Math.max(0, spec.mean + (random() * 2 - 1) * (spec.jitter ?? 0))
  }
  if (spec.p50 === 0) return 0
  const sigma = Math.log(Math.max(spec.p99, spec.p50) / spec.p50) / z99
  // Box-Muller; 1 - random() keeps the logarithm away from zero.
  const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
  return spec.p50 * Math.exp(sigma * normal)
}
