/**
 * A counter and a histogram for the metrics counted on every request: prom-client's own cost
 * about 0.5 us a call (label checks, a closure, a hash); these keep one Map entry per label set
 * and hand prom-client's registry plain values at scrape time, its exposition unchanged.
 */
import type { Registry } from 'prom-client'

/** What prom-client's registry reads of a metric when it renders /metrics (its typings predate the string `type`). */
interface Exposition {
  name: string
  help: string
  type: 'counter' | 'histogram'
  aggregator: 'sum'
  values: { labels: Record<string, string | number>; value: number; metricName?: string }[]
}

type RegisteredMetric = Parameters<Registry['registerMetric']>[0]

type Labels<L extends string> = Record<L, string>

/** Builds the Map key of a label set: the values in label-name order. */
function keyOf<L extends string>(names: readonly L[], labels: Labels<L>): string {
  let key = labels[names[0] as L] ?? ''
  for (let index = 1; index < names.length; index++) key += `\u0001${labels[names[index] as L] ?? ''}`
  return key
}

/** What both metrics share: their entries per label set, and their place in a prom-client registry. */
abstract class HotMetric<L extends string, Entry> {
  abstract readonly type: Exposition['type']
  readonly aggregator = 'sum' as const
  protected readonly entries = new Map<string, Entry>()

  constructor(
    readonly name: string,
    readonly help: string,
    protected readonly labelNames: readonly L[],
    registry: Registry,
  ) {
    // prom-client's registry takes any object shaped like its metrics (name, help, type, get).
    registry.registerMetric(this as unknown as RegisteredMetric)
  }

  abstract get(): Exposition

  reset(): void {
    this.entries.clear()
  }
}

/** A labelled counter registered with a prom-client registry. */
export class HotCounter<L extends string> extends HotMetric<L, { labels: Labels<L>; value: number }> {
  readonly type = 'counter' as const

  inc(labels: Labels<L>, value = 1): void {
    const key = keyOf(this.labelNames, labels)
    const entry = this.entries.get(key)
    if (entry !== undefined) entry.value += value
    else this.entries.set(key, { labels: { ...labels }, value })
  }

  /** What prom-client's registry renders. */
  get(): Exposition {
    const values: Exposition['values'] = []
    for (const entry of this.entries.values()) values.push({ labels: entry.labels, value: entry.value })
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }
}

interface HistogramEntry<L extends string> {
  labels: Labels<L>
  /** Per bucket, not cumulative (summed when rendered). */
  counts: Float64Array
  sum: number
  count: number
}

/** A labelled histogram registered with a prom-client registry. */
export class HotHistogram<L extends string> extends HotMetric<L, HistogramEntry<L>> {
  readonly type = 'histogram' as const

  constructor(name: string, help: string, labelNames: readonly L[], private readonly buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry)
  }

  observe(labels: Labels<L>, value: number): void {
    if (!Number.isFinite(value)) return
    const key = keyOf(this.labelNames, labels)
    let entry = this.entries.get(key)
    if (entry === undefined) {
      entry = { labels: { ...labels }, counts: new Float64Array(this.buckets.length), sum: 0, count: 0 }
      this.entries.set(key, entry)
    }
    const buckets = this.buckets
    for (let index = 0; index < buckets.length; index++) {
      if (value <= (buckets[index] as number)) {
        entry.counts[index] = (entry.counts[index] as number) + 1
        break
      }
    }
    entry.sum += value
    entry.count += 1
  }

  /** What prom-client's registry renders: cumulative `_bucket` lines with `le`, then `_sum` and `_count`. */
  get(): Exposition {
    const values: Exposition['values'] = []
    for (const entry of this.entries.values()) {
      let cumulative = 0
      for (let index = 0; index < this.buckets.length; index++) {
        cumulative += entry.counts[index] as number
        values.push({ metricName: `${this.name}_bucket`, labels: { le: this.buckets[index] as number, ...entry.labels }, value: cumulative })
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...entry.labels }, value: entry.count })
      values.push({ metricName: `${this.name}_sum`, labels: entry.labels, value: entry.sum })
      values.push({ metricName: `${this.name}_count`, labels: entry.labels, value: entry.count })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }
}
