/**
 * Degraded, not down: Postgres stops mid-run, a write is queued, Postgres
 * comes back, the write lands. Uses a private server so stopping it cannot
 * disturb the other test files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createConfigStore, createWriteQueue, ensureDatabase, migrate, stopEmbeddedDatabase, type ConfigStore } from '../src/index.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'
import { startPrivateServer, type PrivateServer } from '@switchboard/test-kit'

describe('write queue across a Postgres outage', () => {
  let server: PrivateServer
  let database: TestDatabase
  let store: ConfigStore
  beforeAll(async () => {
    server = await startPrivateServer('outage')
    database = await createTestDatabase(server.handle.url)
    await migrate(database.pool)
    store = createConfigStore({ pool: database.pool })
  })
  afterAll(async () => {
    await database?.drop()
    await server?.dispose()
  })

  it('keeps a write queued while Postgres is stopped and lands it once Postgres is back', async () => {
    const queue = createWriteQueue({ retryDelayMs: 20, maxRetryDelayMs: 200 })
    await stopEmbeddedDatabase({ dataDir: server.dataDir })

    let attempts = 0
    let signalRetrying: () => void = () => {}
    const retrying = new Promise<void>((resolve) => (signalRetrying = resolve))
    const landed = queue.enqueue('save settings', async () => {
      attempts += 1
      if (attempts === 2) signalRetrying()
      return store.saveSettings({ prune_failed_fallbacks: true }, 'api')
    })

    await retrying // the first attempt failed and the queue came back for more
    expect(queue.status()).toEqual({ healthy: false, reason: expect.stringMatching(/unreachable/), pending: 1 })

    const restarted = await ensureDatabase({ dataDir: server.dataDir, port: server.port })
    expect(restarted.started).toBe(true)
    await expect(landed).resolves.toMatchObject({ load_balancer_config: { prune_failed_fallbacks: true } })
    expect(queue.status()).toEqual({ healthy: true, pending: 0 })
    expect((await store.getSettings()).origins.prune_failed_fallbacks).toBe('api')
  })
})
