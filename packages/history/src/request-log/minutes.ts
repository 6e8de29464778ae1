/**
 * The per-minute (and per-hour) counts of the request log (the baseline migration): what each row counts as in the
 * facets of `GET /api/logs` (its minute and the values the facets group by), noted when the row
 * is encoded and summed per batch when the batch is written, in the batch's own transaction. So
 * the counts hold exactly the rows written: a row dropped from the buffer or refused with its
 * batch is in neither. counts.ts reads the facets and totals of whole minutes from them.
 *
 * The values a row counts by are a combination (`request_log_combinations`), named by a 64-bit
 * hash of them; a count is then four numbers (span, minute, combination, requests), and a batch
 * writes its rows and counts in one message: the combinations new to this process that day, the
 * rows' COPY and the counts' upsert, run by Postgres as one transaction (writer/copy.ts).
 */
import { createHash } from 'node:crypto'
import type pg from 'pg'
import type { RequestRecord } from './record.ts'
import { dayStart } from '../partitions/day-partitions.ts'
import { storable } from '../writer/binary-sink.ts'
import { insertRows, keyIds } from './rows.ts'

export const REQUEST_LOG_COUNTS_TABLE = 'request_log_counts'
export const REQUEST_LOG_COMBINATIONS_TABLE = 'request_log_combinations'

/** The values a row is counted by: a row of `request_log_combinations` (its `last_day` aside). */
export interface MinuteKey {
  node_id: string
  served_provider: string | null
  /** The model served, else the one asked for (query.ts's MODEL). */
  model: string
  status: number
  failure_class: string | null
  picked_by: string
  moved_off: boolean
  is_check: boolean
  added_fallback_served: boolean
  /** Every key the request was served by or tried (query.ts's KEY_IDS). */
  key_ids: string[]
  /** All of the above hashed to a signed 64-bit integer (decimal): `request_log_combinations.id`. */
  id: string
}

/** One row of `request_log_counts`: a minute (ms), what its requests count as, how many. */
export interface MinuteCount {
  at: number
  key: MinuteKey
  requests: number
}

/** Distinct keys remembered before the table starts again (a caller sending a new model name every time cannot grow it). */
const MAX_KEYS = 4_096
const MINUTE_MS = 60_000

/** Postgres text holds no NUL: the counts store their texts as the rows' columns do. */
const storableOrNull = (text: string | null): string | null => (text === null ? null : storable(text))
/** A part of a key's identity: its length first, so no two lists of parts read alike. */
const part = (text: string | null): string => (text === null ? '~' : `${text.length}:${text}`)

/**
 * The id of an identity: its SHA-256's first 8 bytes as a signed bigint, taken from the text as
 * Postgres will store it (no NUL, no lone surrogate), so two identities that differ only there
 * are one combination here too. Two combinations alike in 64 bits: about one chance in 10^19 per pair.
 */
function idOf(identity: string): string {
  return createHash('sha256').update(storable(identity).toWellFormed()).digest().readBigInt64BE(0).toString()
}

/** True when `record` counts as `key`: every value alike (a value NUL was cleaned out of never is: it takes the long way). */
function countsAs(record: RequestRecord, key: MinuteKey): boolean {
  const { served, routing } = record
  return (
    record.status === key.status &&
    (served.model ?? record.requested.model) === key.model &&
    served.provider === key.served_provider &&
    record.node_id === key.node_id &&
    record.failure_class === key.failure_class &&
    routing.picked_by === key.picked_by &&
    (routing.moved_off !== null) === key.moved_off &&
    (routing.check !== null) === key.is_check &&
    routing.added_fallback_served === key.added_fallback_served &&
    sameKeys(record, key.key_ids)
  )
}

/** True when `ids` are `keyIds(record)` (rows.ts): the served key, then each key tried not listed yet. */
function sameKeys(record: RequestRecord, ids: readonly string[]): boolean {
  let count = 0
  const served = record.served.key_id
  if (served !== null) {
    if (ids[0] !== served) return false
    count = 1
  }
  for (const attempt of record.attempts) {
    let listed = false
    for (let index = 0; index < count && !listed; index++) listed = ids[index] === attempt.key_id
    if (listed) continue
    if (ids[count] !== attempt.key_id) return false
    count += 1
  }
  return count === ids.length
}

/**
 * What the rows waiting in a request log's slots count as. Keys are shared between rows (one
 * object per distinct combination, kept in a table that starts again past MAX_KEYS), so a row
 * costs a slot in two arrays and nothing the GC has to copy.
 */
export class MinuteCounts {
  private keys = new Map<string, MinuteKey>()
  private readonly keyOfSlot: (MinuteKey | undefined)[] = []
  private readonly minuteOfSlot: number[] = []

  /** The key noted last: most rows count as the one before them, and are known by comparing fields. */
  private last: MinuteKey | undefined

  /** Notes what the row in `slot` counts as (`at`: its time in ms). */
  note(slot: number, record: RequestRecord, at: number): void {
    const last = this.last
    const key = last !== undefined && countsAs(record, last) ? last : this.keyOf(record)
    this.last = key
    this.keyOfSlot[slot] = key
    this.minuteOfSlot[slot] = Math.floor(at / MINUTE_MS) * MINUTE_MS
  }

  /** The shared key of what `record` counts as: its combination's text built and looked up. */
  private keyOf(record: RequestRecord): MinuteKey {
    const { served, routing } = record
    const model = served.model ?? record.requested.model
    const keys = keyIds(record)
    const identity =
      `${record.status} ${routing.picked_by} ${routing.moved_off !== null ? 1 : 0}${routing.check !== null ? 1 : 0}${routing.added_fallback_served ? 1 : 0} ` +
      `${part(record.node_id)}${part(served.provider)}${part(model)}${part(record.failure_class)}${keys.map(part).join('')}`
    let key = this.keys.get(identity)
    if (key === undefined) {
      if (this.keys.size >= MAX_KEYS) this.keys = new Map()
      key = {
        node_id: storable(record.node_id),
        served_provider: storableOrNull(served.provider),
        model: storable(model),
        status: record.status,
        failure_class: storableOrNull(record.failure_class),
        picked_by: storable(routing.picked_by),
        moved_off: routing.moved_off !== null,
        is_check: routing.check !== null,
        added_fallback_served: routing.added_fallback_served,
        key_ids: keys.map(storable),
        id: idOf(identity),
      }
      this.keys.set(identity, key)
    }
    return key
  }

  /** The counts of the rows in `slots`, one per minute and key (slots noted with no key are left out). */
  countsOf(slots: readonly number[]): MinuteCount[] {
    return sumCounts(slots, (slot) => this.keyOfSlot[slot], (slot) => this.minuteOfSlot[slot] as number)
  }
}

/**
 * The counts of `items` summed per time and combination (one per pair: an upsert cannot touch
 * a row twice). Equal keys may be two objects (the key table started again): known by their id.
 */
function sumCounts<T>(items: Iterable<T>, keyOf: (item: T) => MinuteKey | undefined, atOf: (item: T) => number, requestsOf: (item: T) => number = () => 1): MinuteCount[] {
  const counts: MinuteCount[] = []
  // A batch holds a minute or two: the map of the last time seen is nearly always the one.
  const byTime = new Map<number, Map<string, MinuteCount>>()
  let lastAt = Number.NaN
  let ofTime: Map<string, MinuteCount> | undefined
  for (const item of items) {
    const key = keyOf(item)
    if (key === undefined) continue
    const at = atOf(item)
    if (at !== lastAt || ofTime === undefined) {
      lastAt = at
      ofTime = byTime.get(at)
      if (ofTime === undefined) byTime.set(at, (ofTime = new Map()))
    }
    const count = ofTime.get(key.id)
    if (count === undefined) {
      const added = { at, key, requests: requestsOf(item) }
      ofTime.set(key.id, added)
      counts.push(added)
    } else count.requests += requestsOf(item)
  }
  return counts
}

const HOUR_MS = 3_600_000
/** (combination, day) pairs remembered as written before the set starts again. */
const MAX_KNOWN = 16_384

/**
 * A string as an SQL literal, whatever `standard_conforming_strings` says: quotes doubled, and
 * backslashes doubled in an E'' string when there are any (as libpq's PQescapeLiteral does).
 * The text holds no NUL (`storable`).
 */
export function literal(text: string | null): string {
  if (text === null) return 'NULL'
  const quoted = text.replaceAll("'", "''")
  return text.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`
}

/** An int4 literal, or NULL for a value that is no int32 (as the rows' binary COPY writes it: writer/binary-sink.ts). */
const int4 = (value: number): string => (Number.isInteger(value) && value >= -2_147_483_648 && value <= 2_147_483_647 ? String(value) : 'NULL')
const textArray = (texts: readonly string[]): string => (texts.length === 0 ? "'{}'::text[]" : `ARRAY[${texts.map(literal).join(', ')}]`)
const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/**
 * The statements that write a batch's counts around its rows' COPY: before it, the combinations
 * not yet written that day (`known` holds those that are: `${id} ${day}`); after it, the upsert
 * of each minute's and each hour's count (a statement touches a row once: each hour's
 * combination summed first). Numbers, ISO times and quoted literals only: no parameters, so the
 * whole batch goes as one simple query.
 */
export function countStatements(counts: readonly MinuteCount[], known: ReadonlySet<string>): { before: string | undefined; after: string | undefined; learned: string[] } {
  if (counts.length === 0) return { before: undefined, after: undefined, learned: [] }
  const fresh = new Map<string, { key: MinuteKey; day: number }>()
  const learned = new Set<string>()
  const tuples: string[] = []
  let lastMs = Number.NaN
  let lastIso = ''
  const iso = (ms: number) => (ms === lastMs ? lastIso : ((lastMs = ms), (lastIso = new Date(ms).toISOString())))
  for (const { at, key, requests } of counts) {
    const day = dayStart(at)
    const name = `${key.id} ${day}`
    if (!known.has(name) && !learned.has(name)) {
      learned.add(name)
      const seen = fresh.get(key.id)
      if (seen === undefined || seen.day < day) fresh.set(key.id, { key, day })
    }
    tuples.push(`(60,'${iso(at)}',${key.id},${requests})`)
  }
  const hours = sumCounts(counts, (count) => count.key, (count) => Math.floor(count.at / HOUR_MS) * HOUR_MS, (count) => count.requests)
  for (const { at, key, requests } of hours) tuples.push(`(3600,'${iso(at)}',${key.id},${requests})`)
  const combinations = [...fresh.values()].map(
    ({ key, day }) =>
      `(${key.id}, ${literal(key.node_id)}, ${literal(key.served_provider)}, ${literal(key.model)}, ${int4(key.status)}, ${literal(key.failure_class)}, ${literal(key.picked_by)}, ` +
      `${key.moved_off}, ${key.is_check}, ${key.added_fallback_served}, ${textArray(key.key_ids)}, '${isoDay(day)}')`,
  )
  return {
    before:
      combinations.length === 0
        ? undefined
        : `INSERT INTO ${REQUEST_LOG_COMBINATIONS_TABLE} (id, node_id, served_provider, model, status, failure_class, picked_by, moved_off, is_check, added_fallback_served, key_ids, last_day)
           VALUES ${combinations.join(', ')}
           ON CONFLICT (id) DO UPDATE SET last_day = GREATEST(${REQUEST_LOG_COMBINATIONS_TABLE}.last_day, EXCLUDED.last_day)`,
    after: `INSERT INTO ${REQUEST_LOG_COUNTS_TABLE} (span, at, combination, requests) VALUES ${tuples.join(', ')}
            ON CONFLICT (span, at, combination) DO UPDATE SET requests = ${REQUEST_LOG_COUNTS_TABLE}.requests + EXCLUDED.requests`,
    learned: [...learned],
  }
}

/**
 * Writes batches of rows (rows.ts `batchOf`'s bytes) with their counts: each batch one message,
 * run as one transaction, so the counts hold exactly the rows written. Remembers the
 * combinations it has written for each day, to send each once a day.
 */
export class CountedWriter {
  private known = new Set<string>()

  constructor(private readonly pool: pg.Pool) {}

  async write(data: Buffer, counts: readonly MinuteCount[]): Promise<void> {
    const { before, after, learned } = countStatements(counts, this.known)
    await insertRows(this.pool, data, { before, after })
    if (this.known.size + learned.length > MAX_KNOWN) this.known = new Set()
    for (const name of learned) this.known.add(name)
  }
}
