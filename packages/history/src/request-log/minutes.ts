/**
 * The per-minute (and per-hour) counts of the request log (migration 0022): what each row counts as in the
 * facets of `GET /api/logs` (its minute and the values the facets group by), noted when the row
 * is encoded and summed per batch when the batch is written, in the batch's own transaction. So
 * the counts hold exactly the rows written: a row dropped from the buffer or refused with its
 * batch is in neither. query.ts reads the facets and totals of whole minutes from them.
 */
import { createHash } from 'node:crypto'
import type pg from 'pg'
import type { RequestRecord } from './record.ts'
import { lostConnection } from '../writer/copy.ts'
import { copyBatch, keyIds } from './rows.ts'

export const REQUEST_LOG_MINUTES_TABLE = 'request_log_minutes'

/** The values a row is counted by (the columns of `request_log_minutes` but its minute and count). */
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
  /** All of the above as one text (a hash of it when long): the row's identity within its minute and node. */
  combination: string
}

/** One row of `request_log_minutes`: a minute (ms), what its requests count as, how many. */
export interface MinuteCount {
  at: number
  key: MinuteKey
  requests: number
}

/** A combination longer than this is named by its hash: a B-tree entry holds at most about 2.7 kB (a caller may send any model name). */
const MAX_COMBINATION_CHARS = 512

/** Distinct keys remembered before the table starts again (a caller sending a new model name every time cannot grow it). */
const MAX_KEYS = 4_096
const MINUTE_MS = 60_000

/** Postgres text holds no NUL; the row's columns write it as U+FFFD (binary-sink.ts), and so do the counts. */
const clean = (text: string): string => (text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text)
const cleanOrNull = (text: string | null): string | null => (text === null ? null : clean(text))
/** A part of a key's identity: its length first, so no two lists of parts read alike. */
const part = (text: string | null): string => (text === null ? '~' : `${text.length}:${text}`)

/**
 * The `combination` of an identity: as Postgres will store it (no NUL, no lone surrogate, so two
 * identities that differ only there are one combination here too), hashed when long.
 */
function combinationOf(identity: string): string {
  const text = clean(identity).toWellFormed()
  return text.length <= MAX_COMBINATION_CHARS ? text : `sha256:${createHash('sha256').update(text).digest('hex')}`
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
        node_id: clean(record.node_id),
        served_provider: cleanOrNull(served.provider),
        model: clean(model),
        status: record.status,
        failure_class: cleanOrNull(record.failure_class),
        picked_by: clean(routing.picked_by),
        moved_off: routing.moved_off !== null,
        is_check: routing.check !== null,
        added_fallback_served: routing.added_fallback_served,
        key_ids: keys.map(clean),
        combination: combinationOf(identity),
      }
      this.keys.set(identity, key)
    }
    return key
  }

  /** The counts of the rows in `slots`, one per minute and key (slots noted with no key are left out). */
  countsOf(slots: readonly number[]): MinuteCount[] {
    const counts: MinuteCount[] = []
    for (const slot of slots) {
      const key = this.keyOfSlot[slot]
      if (key === undefined) continue
      const at = this.minuteOfSlot[slot] as number
      // A batch holds a minute or two of a few combinations: a short list beats a map here.
      let count: MinuteCount | undefined
      for (let index = counts.length - 1; index >= 0; index--) {
        const candidate = counts[index] as MinuteCount
        // Equal keys may be two objects (the table started again): one upsert cannot touch a row twice.
        if (candidate.at === at && (candidate.key === key || candidate.key.combination === key.combination)) {
          count = candidate
          break
        }
      }
      if (count === undefined) counts.push({ at, key, requests: 1 })
      else count.requests += 1
    }
    return counts
  }
}

const COLUMNS = ['span', 'at', 'node_id', 'served_provider', 'model', 'status', 'failure_class', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served', 'key_ids', 'combination', 'requests'] as const
const TYPES = ['int4', 'timestamptz', 'text', 'text', 'text', 'int4', 'text', 'text', 'bool', 'bool', 'bool', 'text[]', 'text', 'int4'] as const
const HOUR_MS = 3_600_000

/**
 * Adds `counts` to their minutes' and their hours' rows on `client` (inside the batch's
 * transaction): one upsert, with each hour's combination once (a statement cannot touch a row twice).
 */
export async function insertMinuteCounts(client: pg.PoolClient, counts: readonly MinuteCount[]): Promise<void> {
  if (counts.length === 0) return
  const hours = new Map<string, MinuteCount>()
  for (const count of counts) {
    const at = Math.floor(count.at / HOUR_MS) * HOUR_MS
    const name = `${at} ${count.key.node_id} ${count.key.combination}`
    const hour = hours.get(name)
    if (hour === undefined) hours.set(name, { at, key: count.key, requests: count.requests })
    else hour.requests += count.requests
  }
  const values: unknown[] = []
  const tuples: string[] = []
  const push = (span: number, { at, key, requests }: MinuteCount) => {
    const row = [span, new Date(at).toISOString(), key.node_id, key.served_provider, key.model, key.status, key.failure_class, key.picked_by, key.moved_off, key.is_check, key.added_fallback_served, key.key_ids, key.combination, requests]
    tuples.push(`(${row.map((value, index) => `$${values.push(value)}::${TYPES[index]}`).join(', ')})`)
  }
  for (const count of counts) push(MINUTE_MS / 1000, count)
  for (const hour of hours.values()) push(HOUR_MS / 1000, hour)
  await client.query(
    `INSERT INTO ${REQUEST_LOG_MINUTES_TABLE} (${COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}
     ON CONFLICT (span, at, node_id, combination) DO UPDATE SET requests = ${REQUEST_LOG_MINUTES_TABLE}.requests + EXCLUDED.requests`,
    values,
  )
}

/**
 * Writes a batch of rows (rows.ts `batchOf`'s bytes) and their per-minute counts in one
 * transaction, so the counts hold exactly the rows written.
 */
export async function insertCountedRows(pool: pg.Pool, data: Buffer, counts: readonly MinuteCount[]): Promise<void> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    await copyBatch(client, data)
    await insertMinuteCounts(client, counts)
    await client.query('COMMIT')
  } catch (error) {
    broken = lostConnection(error)
    if (broken === undefined) await client.query('ROLLBACK').catch((rollback: unknown) => (broken = lostConnection(rollback)))
    throw error
  } finally {
    client.release(broken)
  }
}
