/**
 * Writing providers and their keys inside a caller's transaction. Each write
 * returns the events it caused, found by diffing the rows before and after,
 * so the store emits them only once the transaction has committed.
 */
import type { ClientBase } from 'pg'
import { ConfigStoreError } from './errors.ts'
import type { ConfigStoreEvent } from './events.ts'
import { deriveKeyId, keepSecrets, providerType } from './keys.ts'
import { loadProviders } from './rows.ts'
import type { KeyConfig, ProviderConfig, StoredProvider } from './types.ts'

/**
 * `replace`: the provider becomes exactly the input (absent fields and keys
 * are removed), as an API PUT. `merge`: only what is present applies, and keys
 * not listed stay, as config.json on a later boot.
 */
export type WriteMode = 'replace' | 'merge'

/** A provider's own fields and a key's, as their columns are named. */
const PROVIDER_FIELDS = ['type', 'network_config', 'custom_provider_config'] as const
const KEY_FIELDS = ['name', 'value', 'models', 'weight', 'aliases', 'azure_key_config', 'bedrock_key_config', 'vertex_key_config'] as const

/** An upsert that touches an existing row (and its `updated_at`) only when one of `columns` changes. */
function upsert(table: string, identity: string[], columns: readonly string[]): string {
  const all = [...identity, ...columns]
  return `INSERT INTO ${table} (${all.join(', ')}) VALUES (${all.map((_, index) => `$${index + 1}`).join(', ')})
    ON CONFLICT (${identity.join(', ')}) DO UPDATE SET ${columns.map((column) => `${column} = EXCLUDED.${column}`).join(', ')}, updated_at = now()
    WHERE (${columns.map((column) => `${table}.${column}`).join(', ')}) IS DISTINCT FROM (${columns.map((column) => `EXCLUDED.${column}`).join(', ')})`
}
const upsertProvider = upsert('providers', ['name'], PROVIDER_FIELDS)
const upsertKey = upsert('keys', ['provider', 'id'], [...KEY_FIELDS, 'position'])

/** Creates or updates a provider and its keys; returns what changed. */
export async function writeProvider(client: ClientBase, input: ProviderConfig, mode: WriteMode): Promise<ConfigStoreEvent[]> {
  if (!input.name) throw new ConfigStoreError('invalid_field', 'provider name is required', 'name')
  const [before] = await loadProviders(client, input.name, true)
  const merging = mode === 'merge' && before !== undefined
  const custom = input.custom_provider_config ?? (merging ? before.custom_provider_config : undefined)
  const network = input.network_config ?? (merging ? before.network_config : undefined)
  const type = input.type ?? (merging && !input.custom_provider_config ? before.type : typeOf(input.name, custom))

  await client.query(upsertProvider, [input.name, type, json(network), json(custom)])

  const existing = new Map((before?.keys ?? []).map((key, index) => [key.id, { key, index }]))
  const ids = resolveIds(input.name, input.keys)
  for (const [index, key] of input.keys.entries()) {
    const id = ids[index] as string
    const previous = existing.get(id)
    // A client that read a key (redacted) and sends it back unchanged keeps the real value and secrets.
    const sent = keepSecrets(key, previous?.key)
    const keep = mode === 'merge' ? previous?.key : undefined
    const position = mode === 'replace' ? index : previous ? previous.index : existing.size + index
    await client.query(upsertKey, [
      input.name,
      id,
      key.name,
      sent.value,
      key.models ?? keep?.models ?? [],
      key.weight ?? keep?.weight ?? 1,
      json(key.aliases ?? keep?.aliases),
      json(key.azure_key_config ?? keep?.azure_key_config),
      json(sent.bedrock_key_config ?? keep?.bedrock_key_config),
      json(sent.vertex_key_config ?? keep?.vertex_key_config),
      position,
    ])
  }
  if (mode === 'replace') {
    await client.query('DELETE FROM keys WHERE provider = $1 AND NOT (id = ANY($2::text[]))', [input.name, ids])
  }

  const [after] = await loadProviders(client, input.name)
  if (!after) throw new Error(`provider ${input.name} vanished inside its own transaction`)
  return diffProvider(before, after)
}

/** Deletes a provider and its keys; no events when it did not exist. */
export async function removeProvider(client: ClientBase, name: string): Promise<ConfigStoreEvent[]> {
  const [before] = await loadProviders(client, name, true)
  if (!before) return []
  await client.query('DELETE FROM providers WHERE name = $1', [name])
  return [
    ...before.keys.map((key): ConfigStoreEvent => ({ type: 'key:deleted', detail: { provider: name, id: key.id, name: key.name } })),
    { type: 'provider:deleted', detail: { provider: name } },
  ]
}

/** Deletes one key; no events when it did not exist. */
export async function removeKey(client: ClientBase, provider: string, id: string): Promise<ConfigStoreEvent[]> {
  const deleted = await client.query<{ name: string }>('DELETE FROM keys WHERE provider = $1 AND id = $2 RETURNING name', [provider, id])
  const row = deleted.rows[0]
  return row ? [{ type: 'key:deleted', detail: { provider, id, name: row.name } }] : []
}

function resolveIds(provider: string, keys: KeyConfig[]): string[] {
  const seen = new Map<string, number>()
  return keys.map((key, index) => {
    if (!key.name) throw new ConfigStoreError('invalid_field', 'key name is required', `keys[${index}].name`)
    if (typeof key.value !== 'string' || !key.value) throw new ConfigStoreError('invalid_field', 'key value is required', `keys[${index}].value`)
    const id = key.id ?? deriveKeyId(provider, key.name)
    const first = seen.get(id)
    if (first !== undefined) {
      throw new ConfigStoreError('key_duplicate', `key id "${id}" is also used by keys[${first}] (ids come from the name when not given)`, `keys[${index}].id`)
    }
    seen.set(id, index)
    return id
  })
}

function typeOf(name: string, custom: { base_provider_type?: string } | undefined): string {
  try {
    return providerType(name, custom)
  } catch (error) {
    throw new ConfigStoreError('provider_type_unknown', (error as Error).message, 'custom_provider_config.base_provider_type')
  }
}

function diffProvider(before: StoredProvider | undefined, after: StoredProvider): ConfigStoreEvent[] {
  const events: ConfigStoreEvent[] = []
  const providerFields = changedFields(before, after, PROVIDER_FIELDS)
  if (!before || providerFields.length > 0) {
    events.push({ type: 'provider:changed', detail: { provider: after.name, created: !before, fields: providerFields } })
  }
  const previousKeys = new Map((before?.keys ?? []).map((key) => [key.id, key]))
  for (const key of after.keys) {
    const previous = previousKeys.get(key.id)
    previousKeys.delete(key.id)
    const fields = changedFields(previous, key, KEY_FIELDS)
    if (!previous || fields.length > 0) {
      events.push({ type: 'key:changed', detail: { provider: after.name, id: key.id, name: key.name, created: !previous, fields } })
    }
  }
  for (const gone of previousKeys.values()) {
    events.push({ type: 'key:deleted', detail: { provider: after.name, id: gone.id, name: gone.name } })
  }
  return events
}

function changedFields<Row extends object>(before: Row | undefined, after: Row, fields: readonly (keyof Row & string)[]): string[] {
  // Both sides come back from jsonb, which orders object keys, so JSON text compares values.
  return fields.filter((field) => JSON.stringify(before?.[field]) !== JSON.stringify(after[field]))
}

function json(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value)
}
