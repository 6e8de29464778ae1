/**
 * History's own settings, `history_enabled` (default true) and `history_retention_days`
 * (default 7), kept as rows of the config store's `settings` table (`history.enabled`,
 * `history.retention_days`) with the same precedence: a value saved through the API wins
 * over config.json. Every node reads them from Postgres, so they hold fleet-wide.
 */
import type pg from 'pg'
import { saveSetting } from '@switchboard/store'

/** History's settings. */
export interface HistorySettings {
  history_enabled: boolean
  history_retention_days: number
}

/** The defaults (design.md). */
export const defaultHistorySettings: Readonly<HistorySettings> = Object.freeze({ history_enabled: true, history_retention_days: 7 })

const NAMES = { history_enabled: 'history.enabled', history_retention_days: 'history.retention_days' } as const

/** Reads the settings, defaults for what nobody set. */
export async function readHistorySettings(pool: pg.Pool | pg.ClientBase): Promise<HistorySettings> {
  const result = await pool.query<{ name: string; value: unknown }>('SELECT name, value FROM settings WHERE name = ANY($1::text[])', [Object.values(NAMES)])
  const settings: HistorySettings = { ...defaultHistorySettings }
  for (const row of result.rows) {
    if (row.name === NAMES.history_enabled && typeof row.value === 'boolean') settings.history_enabled = row.value
    if (row.name === NAMES.history_retention_days && typeof row.value === 'number') settings.history_retention_days = row.value
  }
  return settings
}

/** Writes the values given; origin `config` leaves a value saved through the API alone. A transaction's client writes them inside it. */
export async function writeHistorySettings(pool: pg.Pool | pg.ClientBase, values: Partial<HistorySettings>, origin: 'config' | 'api'): Promise<HistorySettings> {
  for (const field of Object.keys(NAMES) as (keyof HistorySettings)[]) {
    if (values[field] !== undefined) await saveSetting(pool, NAMES[field], values[field], origin)
  }
  return readHistorySettings(pool)
}
