/**
 * The config store: providers, keys and load balancer settings in Postgres,
 * with change events. Every write is one transaction; events go out after it
 * commits.
 */
import { createHash } from 'node:crypto'
import type { ClientBase, Pool } from 'pg'
import type { LoadBalancerSettings } from '@switchboard/routing'
import { inTransaction } from '../transaction.ts'
import { ConfigStoreError } from './errors.ts'
import { createEmitter, type ConfigStoreEvent } from './events.ts'
import { deriveKeyId } from './keys.ts'
import { removeKey, removeProvider, writeProvider } from './providers.ts'
import { loadProviders } from './rows.ts'
import { readSettings, writeSettings } from './settings.ts'
import type { ConfigFile, KeyConfig, ProviderConfig, Settings, StoredKey, StoredProvider } from './types.ts'

/** What the store needs. */
export interface ConfigStoreComponents {
  pool: Pool
}

/** Options of the store. */
export interface ConfigStoreInit {
  /** Where a throwing event listener is reported; default `console.error`. */
  onListenerError?: (error: unknown) => void
}

/** What `importConfig` did. */
export interface ImportResult {
  /** True when config.json was imported whole (nothing had been imported before). */
  firstBoot: boolean
  /** The changes it made, as emitted. */
  changes: ConfigStoreEvent[]
}

/** Providers, keys and settings, persisted; see `createConfigStore`. */
export type ConfigStore = ReturnType<typeof createConfigStore>

/** Serialises config imports of nodes booting at once; distinct from the migration lock. */
const importLockKey = 0x5357_4243 // "SWBC"

/** Creates the config store on a migrated database. */
export function createConfigStore(components: ConfigStoreComponents, init: ConfigStoreInit = {}) {
  const { pool } = components
  const emitter = createEmitter(init.onListenerError ?? ((error) => console.error('config store listener failed:', error)))

  /** Runs `work` in one transaction (holding `lock`, if given), then emits the events it returned once they are committed. */
  async function transaction<Result>(work: (client: ClientBase) => Promise<[Result, ConfigStoreEvent[]]>, lock?: number): Promise<Result> {
    const [result, events] = await inTransaction(pool, work, lock)
    emitter.emit(events)
    return result
  }

  async function mustLoad(client: ClientBase, name: string): Promise<StoredProvider> {
    const [provider] = await loadProviders(client, name)
    if (!provider) throw new ConfigStoreError('provider_not_found', `no provider named "${name}"`, 'name')
    return provider
  }

  /** Writes a provider whole (as a PUT does) and reads it back. */
  async function replace(client: ClientBase, provider: ProviderConfig): Promise<[StoredProvider, ConfigStoreEvent[]]> {
    const events = await writeProvider(client, provider, 'replace')
    return [await mustLoad(client, provider.name), events]
  }

  return {
    /** Subscribes to every change: `provider:changed`, `provider:deleted`, `key:changed`, `key:deleted`, `settings:changed`. */
    on: emitter.on,

    listProviders: (): Promise<StoredProvider[]> => loadProviders(pool),

    /** Adds a provider (POST); `provider_exists` if it already does. */
    createProvider(provider: ProviderConfig): Promise<StoredProvider> {
      return transaction(async (client) => {
        // The row lock of an existing provider is what makes this check race-free.
        const [existing] = await loadProviders(client, provider.name, true)
        if (existing) throw new ConfigStoreError('provider_exists', `provider "${provider.name}" already exists`, 'name')
        return replace(client, provider)
      })
    },

    /** Creates or replaces a provider with exactly these keys (PUT). A key sent back redacted keeps its value. */
    upsertProvider: (provider: ProviderConfig): Promise<StoredProvider> => transaction((client) => replace(client, provider)),

    /** Deletes a provider and its keys; false when there was none. */
    deleteProvider: (name: string): Promise<boolean> => transaction(async (client) => removed(await removeProvider(client, name))),

    /** Creates or updates one key; fields it omits keep their values. `provider_not_found` if no such provider. */
    upsertKey(providerName: string, key: KeyConfig): Promise<StoredKey> {
      return transaction(async (client) => {
        await mustLoad(client, providerName)
        const events = await writeProvider(client, { name: providerName, keys: [key] }, 'merge')
        const id = key.id ?? deriveKeyId(providerName, key.name)
        const stored = (await mustLoad(client, providerName)).keys.find((candidate) => candidate.id === id)
        if (!stored) throw new Error(`key ${id} vanished inside its own transaction`)
        return [stored, events]
      })
    },

    /** Deletes one key; false when there was none. */
    deleteKey: (providerName: string, id: string): Promise<boolean> => transaction(async (client) => removed(await removeKey(client, providerName, id))),

    getSettings: (): Promise<Settings> => readSettings(pool),

    /**
     * Saves the switches given as set through the API: from then on config.json no longer overrides them.
     * `also` writes other settings rows (history's) in the same transaction: both land, or neither does.
     */
    saveSettings(settings: Partial<LoadBalancerSettings>, origin: 'api', options: { also?: (client: ClientBase) => Promise<void> } = {}): Promise<Settings> {
      return transaction(async (client) => {
        const events = await writeSettings(client, settings, origin)
        await options.also?.(client)
        return [await readSettings(client), events]
      })
    },

    /**
     * Applies config.json. First boot (default: nothing imported yet in this database): imported
     * whole. Later boots: presence-aware; a provider whose entry in the file changed since the last
     * import has its keys added or updated, an unchanged entry is left alone (so API edits survive
     * restarts), nothing is removed, and a switch applies only where no API-saved value exists.
     */
    importConfig(config: ConfigFile, options: { firstBoot?: boolean } = {}): Promise<ImportResult> {
      return transaction(async (client) => {
        const imported = await client.query("SELECT 1 FROM store_meta WHERE name = 'config_imported_at'")
        const firstBoot = options.firstBoot ?? imported.rowCount === 0
        const mode = firstBoot ? 'replace' : 'merge'
        const events: ConfigStoreEvent[] = []
        const names = Object.keys(config.providers ?? {})
        if (firstBoot) {
          for (const provider of await loadProviders(client)) {
            if (!names.includes(provider.name)) events.push(...(await removeProvider(client, provider.name)))
          }
        }
        for (const [name, provider] of Object.entries(config.providers ?? {})) {
          // A later boot applies a provider's entry only when config.json changed it since the
          // last import: an unchanged file must not undo edits made through the API.
          const hash = createHash('sha256').update(JSON.stringify(provider)).digest('hex')
          const metaName = `config_hash:${name}`
          if (!firstBoot) {
            const last = await client.query<{ value: string }>('SELECT value #>> \'{}\' AS value FROM store_meta WHERE name = $1', [metaName])
            if (last.rows[0]?.value === hash) continue
          }
          events.push(...(await writeProvider(client, { ...provider, name, keys: provider.keys ?? [] }, mode)))
          await client.query(
            `INSERT INTO store_meta (name, value) VALUES ($1, to_jsonb($2::text))
             ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
            [metaName, hash],
          )
        }
        events.push(...(await writeSettings(client, config.load_balancer_config ?? {}, 'config', { replace: firstBoot })))
        await client.query(
          `INSERT INTO store_meta (name, value) VALUES ('config_imported_at', to_jsonb(now()))
           ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
        )
        return [{ firstBoot, changes: events }, events]
      }, importLockKey)
    },
  }
}

/** A delete's answer, whether there was anything to delete, with its events. */
function removed(events: ConfigStoreEvent[]): [boolean, ConfigStoreEvent[]] {
  return [events.length > 0, events]
}
