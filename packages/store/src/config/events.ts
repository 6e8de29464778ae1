/**
 * Change events of the config store, emitted after the change is committed
 * and only when something actually changed (re-importing the same config.json
 * at every boot is silent). Later features hook in here: a key edit or delete
 * releases its holds and drops its metrics.
 */
import type { LoadBalancerSettings, SwitchName } from '@switchboard/routing'
import type { SettingOrigin } from './types.ts'

/** Load balancer switches changed. */
export interface SettingsChangedEvent {
  load_balancer_config: LoadBalancerSettings
  /** The switches as they were just before, read in the same transaction. */
  before: LoadBalancerSettings
  origin: SettingOrigin
  fields: SwitchName[]
}

/** Event name to payload. */
export interface ConfigStoreEvents {
  /** A provider was created or one of its own fields changed (its keys have their own events). */
  'provider:changed': { provider: string; created: boolean; fields: string[] }
  /** A provider was deleted; a `key:deleted` for each of its keys came first. */
  'provider:deleted': { provider: string }
  /** A key was created, or these of its fields changed (`value` included, never its contents). */
  'key:changed': { provider: string; id: string; name: string; created: boolean; fields: string[] }
  /** A key was deleted (alone, or with its provider). */
  'key:deleted': { provider: string; id: string; name: string }
  'settings:changed': SettingsChangedEvent
}

/** One event with its name, as collected inside a transaction. */
export type ConfigStoreEvent = { [Name in keyof ConfigStoreEvents]: { type: Name; detail: ConfigStoreEvents[Name] } }[keyof ConfigStoreEvents]

/** Subscribes to every event (a listener picks the types it cares for); returns the unsubscribe function. */
export type Subscribe = (listener: (event: ConfigStoreEvent) => void) => () => void

/** A tiny emitter: a throwing listener is reported, never breaks the store or other listeners. */
export function createEmitter(onListenerError: (error: unknown) => void): { on: Subscribe; emit(events: ConfigStoreEvent[]): void } {
  const listeners = new Set<(event: ConfigStoreEvent) => void>()
  return {
    on(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    emit(events) {
      for (const event of events) {
        for (const listener of listeners) {
          try {
            listener(event)
          } catch (error) {
            onListenerError(error)
          }
        }
      }
    },
  }
}
