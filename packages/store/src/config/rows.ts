/** Reading providers and keys from their tables into the store's types. */
import type { ClientBase, Pool } from 'pg'
import type { CustomProviderConfig, NetworkConfig, StoredKey, StoredProvider } from './types.ts'

/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pool | ClientBase

interface ProviderRow {
  name: string
  type: string
  network_config: NetworkConfig | null
  custom_provider_config: CustomProviderConfig | null
  updated_at: Date
}

interface KeyRow {
  provider: string
  id: string
  name: string
  value: string
  models: string[]
  weight: number
  aliases: Record<string, string> | null
  azure_key_config: Record<string, unknown> | null
  bedrock_key_config: Record<string, unknown> | null
  vertex_key_config: Record<string, unknown> | null
  updated_at: Date
}

/** Loads providers (all, or the one named) with their keys in configured order. */
export async function loadProviders(database: Queryable, name?: string, lock = false): Promise<StoredProvider[]> {
  const filter = name === undefined ? '' : 'WHERE name = $1'
  const parameters = name === undefined ? [] : [name]
  // Locking the provider row serialises concurrent edits of one provider.
  const providers = await database.query<ProviderRow>(
    `SELECT name, type, network_config, custom_provider_config, updated_at FROM providers ${filter} ORDER BY name ${lock ? 'FOR UPDATE' : ''}`,
    parameters,
  )
  const keys = await database.query<KeyRow>(
    `SELECT provider, id, name, value, models, weight, aliases, azure_key_config, bedrock_key_config, vertex_key_config, updated_at
       FROM keys ${name === undefined ? '' : 'WHERE provider = $1'} ORDER BY provider, position, id`,
    parameters,
  )
  const keysByProvider = new Map<string, StoredKey[]>()
  for (const row of keys.rows) {
    const list = keysByProvider.get(row.provider) ?? []
    keysByProvider.set(row.provider, list)
    list.push(toKey(row))
  }
  return providers.rows.map((row) => ({
    name: row.name,
    type: row.type,
    ...(row.network_config ? { network_config: row.network_config } : {}),
    ...(row.custom_provider_config ? { custom_provider_config: row.custom_provider_config } : {}),
    keys: keysByProvider.get(row.name) ?? [],
    updated_at: row.updated_at,
  }))
}

function toKey(row: KeyRow): StoredKey {
  return {
    provider: row.provider,
    id: row.id,
    name: row.name,
    value: row.value,
    models: row.models,
    weight: row.weight,
    ...(row.aliases ? { aliases: row.aliases } : {}),
    ...(row.azure_key_config ? { azure_key_config: row.azure_key_config } : {}),
    ...(row.bedrock_key_config ? { bedrock_key_config: row.bedrock_key_config } : {}),
    ...(row.vertex_key_config ? { vertex_key_config: row.vertex_key_config } : {}),
    updated_at: row.updated_at,
  }
}
