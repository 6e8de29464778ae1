import type { RecordedRequest } from '../index.ts'

/** How many requests the log keeps; older ones drop off. */
export const recordCapacity = 10_000

/** A request as the control API shows it: the key reduced to its last four characters. */
export type PublicRecord = Omit<RecordedRequest, 'key'>

/** One row of `/_sim/stats`. */
export interface StatsRow {
  provider: string
  key_suffix: string
  model: string
  status: number
  count: number
}

/** The last requests in a ring buffer, plus running counts that survive the ring's turnover. */
export class RequestRecords {
  private readonly ring: (RecordedRequest | undefined)[] = new Array(recordCapacity)
  private next = 0
  private size = 0
  private readonly counts = new Map<string, StatsRow>()
  private total = 0
  private aborted = 0
  private open = 0

  /** Counts a provider request that has arrived and not yet ended. */
  started(): void {
    this.open += 1
  }

  /** Records a request that ended (answered, dropped or abandoned). */
  add(record: RecordedRequest): void {
    this.open -= 1
    this.ring[this.next] = record
    this.next = (this.next + 1) % recordCapacity
    if (this.size < recordCapacity) this.size += 1
    this.total += 1
    if (record.aborted) this.aborted += 1
    const id = `${record.provider}\u0000${record.key_suffix}\u0000${record.model}\u0000${record.status}`
    const row = this.counts.get(id)
    if (row === undefined) {
      this.counts.set(id, { provider: record.provider, key_suffix: record.key_suffix, model: record.model, status: record.status, count: 1 })
    } else {
      row.count += 1
    }
  }

  /** Oldest first. */
  list(): RecordedRequest[] {
    const result: RecordedRequest[] = []
    const start = this.size < recordCapacity ? 0 : this.next
    for (let offset = 0; offset < this.size; offset += 1) {
      const record = this.ring[(start + offset) % recordCapacity]
      if (record !== undefined) result.push(record)
    }
    return result
  }

  /** The list without whole keys, for the HTTP control API. */
  publicList(): PublicRecord[] {
    return this.list().map(({ key: _key, ...rest }) => rest)
  }

  /** Running counts since the last clear; `in_flight` counts requests still open. */
  stats(): { total: number; aborted: number; in_flight: number; rows: StatsRow[] } {
    return {
      total: this.total, aborted: this.aborted, in_flight: this.open,
      rows: [...this.counts.values()].map((row) => ({ ...row })),
    }
  }

  clear(): void {
    this.ring.fill(undefined)
    this.next = 0
    this.size = 0
    this.total = 0
    this.aborted = 0
    this.counts.clear()
  }
}

/** The last four characters of a key: enough to tell keys apart in a log, too little to use. */
export function keySuffix(key: string): string {
  return key.length <= 4 ? key : key.slice(-4)
}
