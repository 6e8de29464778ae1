/** The one owner of a node's load-balancer settings: changes go through `set`, readers through `get` and `onChange`. */
import { defaultLoadBalancerSettings, type LoadBalancerSettings } from '@switchboard/routing'

/** Where a change of settings came from: this node's API, the config store (config.json, another node's write), a peer's gossip, or another worker of this node. */
export type SettingsOrigin = 'api' | 'store' | 'peer' | 'worker'

/** The settings of one node. */
export type SettingsOwner = ReturnType<typeof createSettings>

/** Creates the owner of one node's settings. */
export function createSettings(initial: Partial<LoadBalancerSettings>) {
  let current: LoadBalancerSettings = Object.freeze({ ...defaultLoadBalancerSettings, ...initial })
  const listeners = new Set<(settings: LoadBalancerSettings, origin: SettingsOrigin) => void>()
  return {
    get: () => current,
    /** Replaces the settings (missing switches take the reference defaults); listeners hear of a real change only. */
    set(next: Partial<LoadBalancerSettings>, origin: SettingsOrigin): void {
      const merged: LoadBalancerSettings = Object.freeze({ ...defaultLoadBalancerSettings, ...next })
      const same = (Object.keys(merged) as (keyof LoadBalancerSettings)[]).every((name) => merged[name] === current[name])
      if (same) return
      current = merged
      for (const listener of listeners) listener(current, origin)
    },
    /** Calls `listener` after each change; returns the unsubscribe function. */
    onChange(listener: (settings: LoadBalancerSettings, origin: SettingsOrigin) => void): () => void {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
  }
}
