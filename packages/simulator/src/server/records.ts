import type { RecordedRequest } from '../index.ts'

/** How many requests the log keeps; older ones drop off. */
export const recordCapacity = 10_000

/** A request as the control API shows it: the key reduced to its last four characters. */
export type PublicRecord = Omit<RecordedRequest, 'key'>

/** One row of `/_sim/stats`: how many requests ended with this provider, key, model and status. */
export type StatsRow = Pick<RecordedRequest, 'provider' | 'key_suffix' | 'model' | 'status'> & { count: number }

/** The last requests (trimmed in bulk, so a record costs a push), plus running counts that survive the trimming. */
export class RequestRecords {
  private records: RecordedRequest[] = []
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
    if (this.records.push(record) >= 2 * recordCapacity) this.records.splice(0, this.records.length - recordCapacity)
    this.total += 1
    if (record.aborted) this.aborted += 1
    const id = `${record.provider}\u0000${record.key_suffix}\u0000${record.model}\u0000${record.status}`
    const row = this.counts.get(id)
    if (row !== undefined) row.count += 1
    else this.counts.set(id, { provider: record.provider, key_suffix: record.key_suffix, model: record.model, status: record.status, count: 1 })
  }

  /** Oldest first. */
  list(): RecordedRequest[] {
    return this.records.slice(-recordCapacity)
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
    this.records = []
    this.total = 0
    this.aborted = 0
    this.counts.clear()
  }
}

/** The last four characters of a key: enough to tell keys apart in a log, too little to use. */
export function keySuffix(key: string): string {
  return key.length <= 4 ? key : key.slice(-4)
}
