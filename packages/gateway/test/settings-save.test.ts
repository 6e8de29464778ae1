/**
 * The save behind `PUT /api/adaptive-routing/config` (issue 37, item 6) on a real Postgres:
 * switches with history's settings land in one transaction or not at all, and a Postgres that
 * does not answer gets a 503 with nothing applied, here or later behind the caller's back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createConfigStore, createPool, createWriteQueue, migrate, type WriteQueue } from '@switchboard/store'
import { readHistorySettings, writeHistorySettings, type HistorySettings } from '@switchboard/history'
import { defaultLoadBalancerSettings, type LoadBalancerSettings } from '@switchboard/routing'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { freePort } from '@switchboard/test-kit'
import { createSettings } from '../src/settings/settings.ts'
import { createSettingsSave } from '../src/settings/save.ts'
import { GatewayError } from '../src/errors.ts'

const SWITCHES: LoadBalancerSettings = { direction_selection_enabled: false, route_selection_enabled: true, append_fallbacks_to_pinned: true, reroute_failed_directions: false, prune_failed_fallbacks: true }

let database: TestDatabase
const queues: WriteQueue[] = []
beforeAll(async () => {
  database = await createTestDatabase()
  await migrate(database.pool)
})
afterAll(async () => {
  for (const queue of queues) queue.close()
  await database?.drop()
})

/** A save on `pool`, with history's part written by history's own functions; counts what was applied here. */
function saver(pool: TestDatabase['pool'], options: { failHistory?: boolean } = {}) {
  const queue = createWriteQueue({ retryDelayMs: 20 })
  queues.push(queue)
  const settings = createSettings(defaultLoadBalancerSettings)
  const applied: HistorySettings[] = []
  const history = {
    settingsWrite: (values: Partial<HistorySettings>) => {
      let next: HistorySettings | undefined
      return {
        async write(client: Parameters<typeof writeHistorySettings>[0]) {
          // A refusal (a check constraint), not Postgres going away.
          if (options.failHistory) throw Object.assign(new Error('history settings refused'), { code: '23514' })
          next = await writeHistorySettings(client, values, 'api')
        },
        saved: () => {
          applied.push(next!)
          return next!
        },
      }
    },
  }
  const save = createSettingsSave({ store: createConfigStore({ pool }), queue, settings, history: () => history }, { waitMs: 300 })
  return { save, settings, applied, queue }
}

describe('saving the switches with history\'s settings', () => {
  it('lands both in one transaction and applies them here once committed', async () => {
    const { save, settings, applied } = saver(database.pool)
    expect(await save(SWITCHES, { history_retention_days: 3, history_enabled: false })).toEqual({ pending: false })
    expect(settings.get()).toEqual(SWITCHES)
    expect(applied).toEqual([{ history_enabled: false, history_retention_days: 3 }])
    expect((await createConfigStore({ pool: database.pool }).getSettings()).load_balancer_config).toEqual(SWITCHES)
    expect(await readHistorySettings(database.pool)).toEqual({ history_enabled: false, history_retention_days: 3 })
  })

  it('writes neither when history\'s part fails inside the transaction', async () => {
    const before = (await createConfigStore({ pool: database.pool }).getSettings()).load_balancer_config
    const { save, settings, applied } = saver(database.pool, { failHistory: true })
    await expect(save({ ...SWITCHES, direction_selection_enabled: true }, { history_retention_days: 5 })).rejects.toThrow('history settings refused')
    expect((await createConfigStore({ pool: database.pool }).getSettings()).load_balancer_config).toEqual(before)
    expect(settings.get()).toEqual(defaultLoadBalancerSettings)
    expect(applied).toEqual([])
  })

  it('answers 503 store_unavailable when Postgres does not answer, applies nothing, and leaves no write to land later', async () => {
    const down = createPool({ url: `postgres://postgres:postgres@127.0.0.1:${await freePort()}/nothing` })
    try {
      const { save, settings, applied, queue } = saver(down)
      const error = await save(SWITCHES, { history_retention_days: 4 }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(GatewayError)
      expect(error).toMatchObject({ code: 'store_unavailable', status: 503, message: expect.stringContaining('PostgreSQL is unreachable') })
      expect(settings.get()).toEqual(defaultLoadBalancerSettings)
      expect(applied).toEqual([])
      // Given up, not retried: nothing waits in the queue to land once Postgres is back.
      expect(queue.status().pending).toBe(0)

      // The five switches alone keep "degraded, not down": applied here, queued, 202 pending.
      expect(await save(SWITCHES)).toEqual({ pending: true })
      expect(settings.get()).toEqual(SWITCHES)
    } finally {
      await down.end()
    }
  })

  it('gives up a save still queued behind writes waiting for Postgres: it never lands after the 503', async () => {
    const { save, settings, queue } = saver(database.pool)
    let release = () => {}
    const blocker = queue.enqueue('a write waiting for Postgres', () => new Promise<void>((resolve) => (release = resolve)))
    const error = await save({ ...SWITCHES, prune_failed_fallbacks: false }, { history_retention_days: 9 }).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ code: 'store_unavailable' })
    release()
    await blocker
    await queue.drained()
    expect((await readHistorySettings(database.pool)).history_retention_days).not.toBe(9)
    expect(settings.get()).toEqual(defaultLoadBalancerSettings)
  })
})
