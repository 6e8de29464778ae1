/** The providers a node runs: adapters plus the per-model key lists the hot path reads. */
import { createProvider, type ProviderAdapter, type ProviderKey } from '@switchboard/providers'
import { keyServesModel, type RetryPolicy } from '@switchboard/routing'
import type { ResolvedProviderConfig } from '../config/load.ts'
import { providerDeadlines, type ProviderDeadlines } from './deadlines.ts'

/** One provider as the engine uses it. */
export interface ProviderRuntime {
  readonly name: string
  readonly config: ResolvedProviderConfig
  readonly adapter: ProviderAdapter
  readonly policy: RetryPolicy
  /** network_config's deadlines (the engine adds the request's and the defaults). */
  readonly deadlines: ProviderDeadlines
  /** The keys that serve `model`, in config order (cached per model). */
  keysFor(model: string): readonly ProviderKey[]
}

/** Every provider of the node, by name and in config order. */
export interface ProviderRegistry {
  get(name: string): ProviderRuntime | undefined
  readonly list: readonly ProviderRuntime[]
  close(): Promise<void>
}

/** How long a replaced adapter keeps its pool for requests still using it. */
const RETIRE_AFTER_MS = 30_000

/**
 * Builds the runtime of every provider. With `previous`, an unchanged provider keeps its adapter
 * (and its warm pool); adapters no longer used are closed after RETIRE_AFTER_MS.
 */
export function createRegistry(providers: readonly ResolvedProviderConfig[], previous?: ProviderRegistry, now: () => number = Date.now): ProviderRegistry {
  const reused = new Set<ProviderAdapter>()
  const list = providers.map((config): ProviderRuntime => {
    const old = previous?.get(config.name)
    const sameUpstream = old !== undefined && old.config.type === config.type && JSON.stringify(old.config.network) === JSON.stringify(config.network)
    const adapter = sameUpstream ? old.adapter : createProvider({ name: config.name, type: config.type, network: config.network }, now)
    reused.add(adapter)
    const byModel = new Map<string, readonly ProviderKey[]>()
    return {
      name: config.name,
      config,
      adapter,
      policy: {
        maxRetries: config.network.max_retries,
        backoffInitialMs: config.network.retry_backoff_initial,
        backoffMaxMs: config.network.retry_backoff_max,
        ...(config.network.max_retry_after_in_seconds !== undefined ? { retryAfterMaxMs: config.network.max_retry_after_in_seconds * 1000 } : {}),
      },
      deadlines: providerDeadlines(config.network),
      keysFor(model) {
        let keys = byModel.get(model)
        if (keys === undefined) {
          keys = config.keys.filter((key) => keyServesModel(key, model))
          // Bounded: unknown model names from callers must not grow the cache without limit.
          if (byModel.size < 1000) byModel.set(model, keys)
        }
        return keys
      },
    }
  })
  if (previous !== undefined) {
    const retired = previous.list.map((runtime) => runtime.adapter).filter((adapter) => !reused.has(adapter))
    if (retired.length > 0) setTimeout(() => void Promise.all(retired.map((adapter) => adapter.close())), RETIRE_AFTER_MS).unref()
  }
  const byName = new Map(list.map((runtime) => [runtime.name, runtime]))
  return {
    get: (name) => byName.get(name),
    list,
    close: async () => {
      await Promise.all(list.map((runtime) => runtime.adapter.close()))
    },
  }
}
