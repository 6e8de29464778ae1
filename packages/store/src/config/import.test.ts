import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/database.ts'
import { migrate } from '../migrations/migrate.ts'
import type { SettingsChangedEvent } from './events.ts'
import { createConfigStore, type ConfigStore } from './store.ts'
import { defaultLoadBalancerSettings } from '@switchboard/routing'
import type { ConfigFile } from './types.ts'

/** The stored provider of that name, read through the list (the product never reads one alone). */
const providerNamed = async (store: ConfigStore, name: string) => (await store.listProviders()).find((provider) => provider.name === name)

const configFile: ConfigFile = {
  providers: {
    openai: { keys: [{ name: 'prod-1', value: 'env.OPENAI_KEY', models: ['*'], weight: 1 }] },
    groq: { custom_provider_config: { base_provider_type: 'openai' }, keys: [{ name: 'g', value: 'env.GROQ_KEY', models: ['llama'], weight: 1 }] },
  },
  load_balancer_config: { reroute_failed_directions: true, route_selection_enabled: false },
}

describe('config.json import and settings precedence (reference: Configuration)', () => {
  let database: TestDatabase
  let store: ConfigStore
  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.pool)
  })
  afterAll(() => database.drop())
  beforeEach(async () => {
    await database.pool.query('TRUNCATE providers, keys, settings, store_meta')
    store = createConfigStore({ pool: database.pool })
  })

  it('starts from the reference defaults: selection on, the rest opt-in', async () => {
    const settings = await store.getSettings()
    expect(settings.load_balancer_config).toEqual(defaultLoadBalancerSettings)
    expect(Object.values(settings.origins)).toEqual(Array(5).fill('default'))
  })

  it('imports config.json whole on the first boot, presence-aware after', async () => {
    expect((await store.importConfig(configFile)).firstBoot).toBe(true)
    expect((await store.listProviders()).map((provider) => provider.name)).toEqual(['groq', 'openai'])
    expect((await store.getSettings()).load_balancer_config).toEqual({
      ...defaultLoadBalancerSettings,
      reroute_failed_directions: true,
      route_selection_enabled: false,
    })

    // A provider added through the API survives a later boot whose config.json lacks it.
    await store.upsertProvider({ name: 'anthropic', keys: [] })
    const later = await store.importConfig({ providers: { openai: configFile.providers!.openai! } })
    expect(later.firstBoot).toBe(false)
    expect(later.changes).toEqual([])
    expect((await store.listProviders()).map((provider) => provider.name)).toEqual(['anthropic', 'groq', 'openai'])
    // Switches config.json no longer lists keep their values.
    expect((await store.getSettings()).load_balancer_config.reroute_failed_directions).toBe(true)
  })

  it('adds and updates keys from config.json on a later boot, removing none', async () => {
    await store.importConfig(configFile)
    await store.upsertKey('openai', { name: 'api-added', value: 'sk-api-added-000000eeee', models: ['*'], weight: 1 })
    await store.importConfig({
      providers: {
        openai: {
          keys: [
            { name: 'prod-1', value: 'env.OPENAI_KEY_ROTATED', models: ['*'], weight: 1 },
            { name: 'prod-2', value: 'env.OPENAI_KEY_2', models: ['*'], weight: 1 },
          ],
        },
      },
    })
    const keys = (await providerNamed(store, 'openai'))!.keys
    expect(keys.map((key) => [key.name, key.value])).toEqual([
      ['prod-1', 'env.OPENAI_KEY_ROTATED'],
      ['api-added', 'sk-api-added-000000eeee'],
      ['prod-2', 'env.OPENAI_KEY_2'],
    ])
  })

  it('keeps an API edit of a key across a later boot with the same config.json', async () => {
    await store.importConfig(configFile)
    const before = (await providerNamed(store, 'openai'))!.keys[0]!
    await store.upsertKey('openai', { id: before.id, name: before.name, value: 'sk-edited-through-api-1234', models: ['*'], weight: 3 })
    expect((await store.importConfig(configFile)).changes).toEqual([])
    expect((await providerNamed(store, 'openai'))!.keys[0]).toMatchObject({ value: 'sk-edited-through-api-1234', weight: 3 })
  })

  it('lets a switch saved through the API win over config.json on every later boot', async () => {
    await store.importConfig(configFile)
    await store.saveSettings({ reroute_failed_directions: false }, 'api')
    const changes: SettingsChangedEvent[] = []
    store.on((event) => {
      if (event.type === 'settings:changed') changes.push(event.detail)
    })

    await store.importConfig({ load_balancer_config: { reroute_failed_directions: true, prune_failed_fallbacks: true } })
    const settings = await store.getSettings()
    expect(settings.load_balancer_config.reroute_failed_directions).toBe(false) // the API's value stands
    expect(settings.load_balancer_config.prune_failed_fallbacks).toBe(true) // no API value: config.json applies
    expect(settings.origins).toMatchObject({ reroute_failed_directions: 'api', prune_failed_fallbacks: 'config' })
    expect(changes).toEqual([expect.objectContaining({ origin: 'config', fields: ['prune_failed_fallbacks'] })])
  })

  it('applies an API save to exactly the fields given', async () => {
    await store.importConfig(configFile)
    const saved = await store.saveSettings({ ...defaultLoadBalancerSettings, append_fallbacks_to_pinned: true }, 'api')
    expect(saved.load_balancer_config).toEqual({ ...defaultLoadBalancerSettings, append_fallbacks_to_pinned: true })
    expect(Object.values(saved.origins)).toEqual(Array(5).fill('api'))
  })

  it('imports config.json exactly once when two nodes boot at the same moment', async () => {
    const other = createConfigStore({ pool: database.pool })
    const results = await Promise.all([store.importConfig(configFile), other.importConfig(configFile)])
    expect(results.map((result) => result.firstBoot).sort()).toEqual([false, true])
    expect(results.find((result) => !result.firstBoot)?.changes).toEqual([])
  })
})
