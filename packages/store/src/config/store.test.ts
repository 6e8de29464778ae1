import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/database.ts'
import { migrate } from '../migrations/migrate.ts'
import type { ConfigStoreEvent } from './events.ts'
import { deriveKeyId, redactKeySecrets } from './keys.ts'
import { createConfigStore, type ConfigStore } from './store.ts'
import type { StoredProvider } from './types.ts'

/** The stored provider of that name, read through the list (the product never reads one alone). */
const providerNamed = async (store: ConfigStore, name: string) => (await store.listProviders()).find((provider) => provider.name === name)

/** A provider as the admin API shows it: every key's secrets redacted. */
const redacted = (provider: StoredProvider) => ({ ...provider, keys: provider.keys.map((key) => redactKeySecrets(key)) })

const openai = {
  name: 'openai',
  network_config: { base_url: 'https://api.openai.example/v1', max_retries: 2 },
  keys: [
    { name: 'prod-1', value: 'sk-prod-1-0000000000aaaa', models: ['*'], weight: 1 },
    { id: 'team-key', name: 'team', value: 'sk-team-00000000000bbbb', models: ['gpt-4o'], weight: 0.5, aliases: { 'gpt-4o': 'gpt-4o-2024' } },
  ],
}

describe('config store: providers and keys', () => {
  let database: TestDatabase
  let store: ConfigStore
  let events: ConfigStoreEvent[]
  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.pool)
  })
  afterAll(() => database.drop())
  beforeEach(async () => {
    await database.pool.query('TRUNCATE providers, keys, settings, store_meta')
    store = createConfigStore({ pool: database.pool })
    events = []
    store.on((event) => {
      if (event.type !== 'settings:changed') events.push(event)
    })
  })

  it('creates a provider with its keys, derives missing ids, and lists it', async () => {
    const created = await store.createProvider(openai)
    expect(created.type).toBe('openai')
    expect(created.keys.map((key) => key.id)).toEqual([deriveKeyId('openai', 'prod-1'), 'team-key'])
    expect(created.keys[1]).toMatchObject({ models: ['gpt-4o'], weight: 0.5, aliases: { 'gpt-4o': 'gpt-4o-2024' } })
    expect(await store.listProviders()).toEqual([created])
    expect(events.map((event) => event.type)).toEqual(['provider:changed', 'key:changed', 'key:changed'])
  })

  it('shows key values only redacted', async () => {
    await store.createProvider(openai)
    const shown = redacted((await providerNamed(store, 'openai'))!)
    expect(shown.keys.map((key) => key.value)).toEqual(['sk-...aaaa', 'sk-...bbbb'])
    expect(JSON.stringify(shown)).not.toContain('sk-prod-1-0000000000aaaa')
  })

  it('keeps the real value when a client sends a key back as it read it (redacted)', async () => {
    await store.createProvider(openai)
    const shown = redacted((await providerNamed(store, 'openai'))!)
    events = []
    await store.upsertProvider({ ...shown, keys: shown.keys.map((key) => ({ ...key, weight: 2 })) })
    const stored = await providerNamed(store, 'openai')
    expect(stored?.keys.map((key) => key.value)).toEqual(['sk-prod-1-0000000000aaaa', 'sk-team-00000000000bbbb'])
    expect(events.map((event) => event.detail)).toEqual([
      expect.objectContaining({ id: deriveKeyId('openai', 'prod-1'), fields: ['weight'] }),
      expect.objectContaining({ id: 'team-key', fields: ['weight'] }),
    ])
  })

  it('replaces the key set on upsert and reports each removed key', async () => {
    await store.createProvider(openai)
    events = []
    await store.upsertProvider({ name: 'openai', keys: [openai.keys[1]!] })
    expect((await providerNamed(store, 'openai'))?.keys.map((key) => key.id)).toEqual(['team-key'])
    expect(events).toEqual([
      { type: 'provider:changed', detail: { provider: 'openai', created: false, fields: ['network_config'] } },
      { type: 'key:deleted', detail: { provider: 'openai', id: deriveKeyId('openai', 'prod-1'), name: 'prod-1' } },
    ])
  })

  it('emits nothing when a write changes nothing', async () => {
    await store.createProvider(openai)
    events = []
    await store.upsertProvider(openai)
    expect(events).toEqual([])
  })

  it('edits and deletes single keys, leaving the others alone', async () => {
    await store.createProvider(openai)
    events = []
    const edited = await store.upsertKey('openai', { id: 'team-key', name: 'team', value: 'sk-team-rotated-0000cccc', models: ['gpt-4o'], weight: 0.5 })
    expect(edited).toMatchObject({ value: 'sk-team-rotated-0000cccc', aliases: { 'gpt-4o': 'gpt-4o-2024' } })
    expect(await store.deleteKey('openai', deriveKeyId('openai', 'prod-1'))).toBe(true)
    expect(await store.deleteKey('openai', 'no-such-key')).toBe(false)
    expect(events.map((event) => [event.type, event.detail])).toEqual([
      ['key:changed', expect.objectContaining({ id: 'team-key', created: false, fields: ['value'] })],
      ['key:deleted', { provider: 'openai', id: deriveKeyId('openai', 'prod-1'), name: 'prod-1' }],
    ])
  })

  it('deletes a provider with its keys, each key reported before the provider', async () => {
    await store.createProvider(openai)
    events = []
    expect(await store.deleteProvider('openai')).toBe(true)
    expect(await store.deleteProvider('openai')).toBe(false)
    expect(await providerNamed(store, 'openai')).toBeUndefined()
    expect(events.map((event) => event.type)).toEqual(['key:deleted', 'key:deleted', 'provider:deleted'])
    expect((await database.pool.query('SELECT count(*)::int AS n FROM keys')).rows[0]).toEqual({ n: 0 })
  })

  it('refuses with a code and the field at fault', async () => {
    await store.createProvider(openai)
    await expect(store.createProvider(openai)).rejects.toMatchObject({ code: 'provider_exists', field: 'name' })
    await expect(store.upsertKey('nobody', openai.keys[0]!)).rejects.toMatchObject({ code: 'provider_not_found' })
    await expect(store.upsertProvider({ name: 'groq', keys: [] })).rejects.toMatchObject({
      code: 'provider_type_unknown',
      field: 'custom_provider_config.base_provider_type',
    })
    await expect(
      store.upsertProvider({ name: 'openai', keys: [openai.keys[0]!, { ...openai.keys[0]!, value: 'sk-other-0000000000dddd' }] }),
    ).rejects.toMatchObject({ code: 'key_duplicate', field: 'keys[1].id' })
    // A refused write changes nothing.
    expect((await providerNamed(store, 'openai'))?.keys).toHaveLength(2)
  })

  it('stores an OpenAI-compatible provider under its own name', async () => {
    const groq = await store.upsertProvider({ name: 'groq', custom_provider_config: { base_provider_type: 'openai' }, keys: [] })
    expect(groq).toMatchObject({ name: 'groq', type: 'openai', custom_provider_config: { base_provider_type: 'openai' } })
  })

  it('keeps the store working when a listener throws', async () => {
    const failures: unknown[] = []
    const fragile = createConfigStore({ pool: database.pool }, { onListenerError: (error) => failures.push(error) })
    fragile.on((event) => {
      if (event.type === 'provider:changed') throw new Error('listener bug')
    })
    await expect(fragile.createProvider(openai)).resolves.toMatchObject({ name: 'openai' })
    expect(failures).toHaveLength(1)
  })
})
