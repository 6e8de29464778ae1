/**
 * Saving `PUT /api/adaptive-routing/config` (issue 37, item 6). The five switches alone apply at
 * once and are queued until Postgres takes them (202 `pending`). With history's settings, one
 * transaction through the write queue, applied only once committed: all or nothing, else 503.
 */
import { isUnreachable, type ConfigStore, type WriteQueue } from '@switchboard/store'
import type { LoadBalancerSettings } from '@switchboard/routing'
import type { HistorySettings } from '@switchboard/history'
import { GatewayError } from '../errors.ts'
import { atMost } from '../boot/shutdown.ts'
import type { HistoryRecording } from '../recording/history.ts'
import type { SettingsOwner } from './settings.ts'

export interface SettingsSaveComponents {
  store: Pick<ConfigStore, 'saveSettings'>
  queue: WriteQueue
  settings: SettingsOwner
  /** History's settings (null when history is not running). */
  history: () => Pick<HistoryRecording, 'settingsWrite'> | null
}

/** Saves the switches, and history's settings with them when given (an undefined value is not given). */
export type SaveSettings = (switches: LoadBalancerSettings, history?: Partial<HistorySettings>) => Promise<{ pending: boolean }>

/** Thrown inside the queue: not an "unreachable" error, so the queue gives the write up instead of retrying it. */
class NotSaved extends Error {
  readonly code = 'not_saved'
}

const UNAVAILABLE = 'PostgreSQL is unreachable, so these settings cannot be saved right now; nothing was changed. Retry shortly (the five switches alone can be saved during an outage: they apply at once and reach Postgres when it is back).'

/** Creates the save behind the adaptive routing config API; `waitMs`: how long a save waits for Postgres before answering (switches alone: pending; with history: 503). */
export function createSettingsSave(components: SettingsSaveComponents, init: { waitMs?: number } = {}): SaveSettings {
  const waitMs = init.waitMs ?? 2_000

  const saveSwitches = async (switches: LoadBalancerSettings) => {
    components.settings.set(switches, 'api')
    const landed = components.queue.enqueue('save load balancer settings', () => components.store.saveSettings(switches, 'api'))
    return { pending: (await atMost(waitMs, landed.then(() => 'landed' as const))) === undefined }
  }

  const saveBoth = async (switches: LoadBalancerSettings, values: Partial<HistorySettings>, history: Pick<HistoryRecording, 'settingsWrite'>) => {
    const part = history.settingsWrite(values)
    let state: 'queued' | 'writing' | 'given_up' = 'queued'
    const landed = components.queue.enqueue('save load balancer and history settings', async () => {
      // Its turn came after the caller was told 503: it must not land now.
      if (state === 'given_up') throw new NotSaved('given up before Postgres answered')
      state = 'writing'
      try {
        return await components.store.saveSettings(switches, 'api', { also: (client) => part.write(client) })
      } catch (error) {
        // Rolled back: one try only (the caller hears 503 and retries), so nothing lands later behind its back.
        if (isUnreachable(error)) throw new NotSaved(`Postgres is unreachable: ${(error as Error).message}`)
        throw error
      }
    })
    // failure null: landed; else why not.
    const outcome = landed.then(() => ({ failure: null }), (error: unknown) => ({ failure: error }))
    let settled = await atMost(waitMs, outcome)
    if (settled === undefined) {
      // Still behind other writes waiting for Postgres: given up. Already writing: its transaction decides.
      if (state === 'queued') {
        state = 'given_up'
        throw new GatewayError('store_unavailable', UNAVAILABLE)
      }
      settled = await outcome
    }
    const failure = settled.failure
    if (failure !== null) throw failure instanceof NotSaved ? new GatewayError('store_unavailable', UNAVAILABLE) : failure
    components.settings.set(switches, 'api')
    part.saved()
    return { pending: false }
  }

  return async (switches, values) => {
    const history = values === undefined || Object.values(values).every((value) => value === undefined) ? null : components.history()
    if (history === null || values === undefined) return saveSwitches(switches)
    return saveBoth(switches, values, history)
  }
}
