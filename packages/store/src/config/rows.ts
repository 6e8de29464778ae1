/** Reading providers and keys from their tables into the store's types. */
import type { ClientBase, Pool } from 'pg'
import type { StoredKey, StoredProvider } from './types.ts'

/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pool | ClientBase

/** A row as a query returns it: a field the stored object may lack (an optional config) is NULL. */
type Row<Stored> = { [Field in keyof Stored]-?: undefined extends Stored[Field] ? Exclude<Stored[Field], undefined> | null : Stored[Field] }

/** Loads providers (all, or the one named) with their keys in configured order. */
export async function loadProviders(database: Queryable, name?: string, lock = false): Promise<StoredProvider[]> {
  const filter = name === undefined ? '' : 'WHERE name = $1'
  const parameters = name === undefined ? [] : [name]
  // Locking the provider row serialises concurrent edits of one provider.
  const providers = await database.query<Row<Omit<StoredProvider, 'keys'>>>(
    `SELECT name, type, network_config, custom_provider_config, updated_at FROM providers ${filter} ORDER BY name ${lock ? 'FOR UPDATE' : ''}`,
    parameters,
  )
  const keys = await database.query<Row<StoredKey>>(
    `SELECT provider, id, name, value, models, weight, aliases, azure_key_config, bedrock_key_config, vertex_key_config, updated_at
       FROM keys ${name === undefined ? '' : 'WHERE provider = $1'} ORDER BY provider, position, id`,
    parameters,
  )
  const keysByProvider = new Map<string, StoredKey[]>()
  for (const key of keys.rows.map((row) => withoutNulls<StoredKey>(row))) {
    const list = keysByProvider.get(key.provider) ?? []
    keysByProvider.set(key.provider, list)
    list.push(key)
  }
  return providers.rows.map((row) => {
    const { updated_at, ...provider } = withoutNulls<Omit<StoredProvider, 'keys'>>(row)
    return { ...provider, keys: keysByProvider.get(provider.name) ?? [], updated_at }
  })
}

/** The stored object a row holds: its NULL fields (configs a provider or key does not have) left out. */
function withoutNulls<Stored>(row: Row<Stored>): Stored {
  return Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null)) as Stored
}
