/**
 * Load balancer settings, one row per switch so each remembers who set it.
 * Settings saved through the API or dashboard take precedence over
 * config.json (reference: adaptive-load-balancing, Configuration).
 */
import { defaultLoadBalancerSettings, SWITCH_NAMES, type LoadBalancerSettings, type SwitchName } from '@switchboard/routing'
import type { ConfigStoreEvent } from './events.ts'
import type { Queryable } from './rows.ts'
import type { SettingOrigin, Settings } from './types.ts'

const prefix = 'load_balancer_config.'

/** Reads the settings, defaults filled in for switches nobody has set. */
export async function readSettings(database: Queryable): Promise<Settings> {
  const rows = await database.query<{ name: string; value: unknown; origin: SettingOrigin }>(
    'SELECT name, value, origin FROM settings WHERE name LIKE $1',
    [`${prefix}%`],
  )
  const load_balancer_config: LoadBalancerSettings = { ...defaultLoadBalancerSettings }
  const origins = Object.fromEntries(SWITCH_NAMES.map((field) => [field, 'default'])) as Settings['origins']
  for (const row of rows.rows) {
    const field = row.name.slice(prefix.length) as SwitchName
    if (!SWITCH_NAMES.includes(field) || typeof row.value !== 'boolean') continue
    load_balancer_config[field] = row.value
    origins[field] = row.origin
  }
  return { load_balancer_config, origins }
}

/**
 * Writes the switches given. With origin `config`, a switch last saved through
 * the API is left alone; with `api`, it is always written and marked `api`.
 * `replace` first forgets every switch.
 */
export async function writeSettings(
  database: Queryable,
  values: Partial<LoadBalancerSettings>,
  origin: SettingOrigin,
  options: { replace?: boolean } = {},
): Promise<ConfigStoreEvent[]> {
  const before = await readSettings(database)
  // A first boot imports config.json whole: switches it omits go back to their defaults.
  if (options.replace) await database.query('DELETE FROM settings WHERE name LIKE $1', [`${prefix}%`])
  const fields = SWITCH_NAMES.filter((field) => typeof values[field] === 'boolean')
  for (const field of fields) await saveSetting(database, prefix + field, values[field], origin)
  const after = await readSettings(database)
  const changed = SWITCH_NAMES.filter((field) => before.load_balancer_config[field] !== after.load_balancer_config[field])
  if (changed.length === 0) return []
  return [{ type: 'settings:changed', detail: { load_balancer_config: after.load_balancer_config, before: before.load_balancer_config, origin, fields: changed } }]
}

/** Writes one row of `settings`; with origin `config`, a value last saved through the API is left alone. */
export async function saveSetting(database: Queryable, name: string, value: unknown, origin: SettingOrigin): Promise<void> {
  await database.query(
    `INSERT INTO settings (name, value, origin) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, origin = EXCLUDED.origin, updated_at = now()
     WHERE $3 = 'api' OR settings.origin = 'config'`,
    [name, JSON.stringify(value), origin],
  )
}
