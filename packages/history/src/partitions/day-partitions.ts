/**
 * Day partitions of the history tables (design.md: "tables partitioned by day ... The
 * cluster's leader drops partitions past retention once a day"). A table is created
 * `PARTITION BY RANGE (at)`; each UTC day is a partition named `<table>_pYYYYMMDD`, made
 * ahead of time, and retention drops whole partitions (no row-by-row DELETE, no bloat).
 */
import type pg from 'pg'
import { inTransaction } from '@switchboard/store'

/** A UTC day. */
export const DAY_MS = 86_400_000
/** Serialises partition DDL between nodes creating the same day at once. */
const PARTITION_LOCK = 0x5357_4814

/** The UTC day of `ms` as `YYYYMMDD`. */
export function dayName(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')
}

/** Midnight UTC of the day holding `ms`. */
export function dayStart(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS
}

/**
 * Creates the partitions of `tables` for the days from the one holding `fromMs` through
 * `daysAhead` days after it (defaults: today, 2 days ahead). Idempotent; safe from many nodes.
 * Returns the partitions it created.
 */
export async function createDayPartitions(
  pool: pg.Pool,
  tables: readonly string[],
  options: { fromMs: number; daysAhead?: number; daysBehind?: number; /** Storage parameters of each new partition (`name = value, ...`). */ storage?: string },
): Promise<string[]> {
  const first = dayStart(options.fromMs) - (options.daysBehind ?? 0) * DAY_MS
  const last = dayStart(options.fromMs) + (options.daysAhead ?? 2) * DAY_MS
  const wanted: { table: string; name: string; from: string; to: string }[] = []
  for (const table of tables) {
    for (let day = first; day <= last; day += DAY_MS) {
      wanted.push({ table, name: `${table}_p${dayName(day)}`, from: new Date(day).toISOString(), to: new Date(day + DAY_MS).toISOString() })
    }
  }
  const existing = new Set(await listPartitionNames(pool, tables))
  const missing = wanted.filter((partition) => !existing.has(partition.name))
  if (missing.length === 0) return []
  return inTransaction(pool, async (client) => {
    const created: string[] = []
    const now = new Set(await listPartitionNames(client, tables))
    for (const partition of missing) {
      if (now.has(partition.name)) continue
      const storage = options.storage === undefined ? '' : ` WITH (${options.storage})`
      await client.query(`CREATE TABLE ${partition.name} PARTITION OF ${partition.table} FOR VALUES FROM ('${partition.from}') TO ('${partition.to}')${storage}`)
      created.push(partition.name)
    }
    return created
  }, PARTITION_LOCK)
}

/** Drops the partitions of `tables` whose whole UTC day ended at or before `beforeMs`. Returns the dropped names. */
export async function dropDayPartitionsBefore(pool: pg.Pool, tables: readonly string[], beforeMs: number): Promise<string[]> {
  const cutoff = dayName(dayStart(beforeMs))
  return inTransaction(pool, async (client) => {
    const dropped: string[] = []
    for (const name of await listPartitionNames(client, tables)) {
      const day = /_p(\d{8})$/.exec(name)?.[1]
      if (day === undefined || day >= cutoff) continue
      await client.query(`DROP TABLE IF EXISTS ${name}`)
      dropped.push(name)
    }
    return dropped
  }, PARTITION_LOCK)
}

/** The cutoff of a retention of `retentionDays` at `nowMs`: a day that ended before it is dropped. */
export function retentionCutoff(nowMs: number, retentionDays: number): number {
  return nowMs - Math.max(1, retentionDays) * DAY_MS
}

/** Names of the partitions attached to `tables`. */
export async function listPartitionNames(pool: pg.Pool | pg.ClientBase, tables: readonly string[]): Promise<string[]> {
  const result = await pool.query<{ name: string }>(
    `SELECT child.relname AS name FROM pg_inherits
       JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
       JOIN pg_class child ON child.oid = pg_inherits.inhrelid
       JOIN pg_namespace ns ON ns.oid = parent.relnamespace
      WHERE parent.relname = ANY($1::text[]) AND ns.nspname = current_schema()
      ORDER BY child.relname`,
    [tables],
  )
  return result.rows.map((row) => row.name)
}
