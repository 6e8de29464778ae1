/**
 * History's own settings, `history_enabled` (default true) and `history_retention_days`
 * (default 7), kept as rows of the config store's `settings` table (`history.enabled`,
 * `history.retention_days`) with the same precedence: a value saved through the API wins
 * over config.json. Every node reads them from Postgres, so they hold fleet-wide.
 */
import type pg from 'pg'

/** History's settings. */
export interface HistorySettings {
  history_enabled: boolean
  history_retention_days: number
}

/** The defaults (design.md). */
export const defaultHistorySettings: Readonly<HistorySettings> = Object.freeze({ history_enabled: true, history_retention_days: 7 })

const NAMES = { history_enabled: 'history.enabled', history_retention_days: 'history.retention_days' } as const

/** Most days of history kept; a day partition per day. */
export const MAX_RETENTION_DAYS = 365

/** A problem with a settings value, for a 400 or a config error; null when valid. */
export function checkHistorySettings(values: Partial<Record<keyof HistorySettings, unknown>>): string | null {
  if (values.history_enabled !== undefined && typeof values.history_enabled !== 'boolean') return 'history_enabled must be true or false'
  const days = values.history_retention_days
  if (days !== undefined && (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_RETENTION_DAYS)) return `history_retention_days must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}`
  return null
}

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
    if (values[field] === undefined) continue
    await pool.query(
      `INSERT INTO settings (name, value, origin) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, origin = EXCLUDED.origin, updated_at = now()
       WHERE $3 = 'api' OR settings.origin = 'config'`,
      [NAMES[field], JSON.stringify(values[field]), origin],
    )
  }
  return readHistorySettings(pool)
}
