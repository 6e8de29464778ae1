/**
 * The node's providers: the config store's rows mirrored in memory, and the registry the request
 * path reads. A write Postgres does not take in time is applied here at once and lands when it
 * returns (issue 3, "degraded, not down"). Store events reload the mirror.
 */
import type { Logger } from 'pino'
import { deriveKeyId, keepSecrets, type ConfigStore, type StoredProvider, type WriteQueue } from '@switchboard/store'
import { resolveProviders, type ProviderSource } from '../config/load.ts'
import { createRegistry, type ProviderRegistry } from '../inference/registry.ts'
import { atMost } from '../boot/shutdown.ts'

export interface DirectoryComponents {
  store: ConfigStore
  queue: WriteQueue
  logger: Logger
  env: NodeJS.ProcessEnv
}

export interface DirectoryInit {
  /** Called with every new registry (the balancer learns the providers and keys from it). */
  onChange?: (registry: ProviderRegistry) => void
  /** config.json's providers, served when the store cannot be read at start (until a `reload` works). */
  fallback?: ProviderSource[]
}

/** What a write did: landed in Postgres, or applied here and still queued. */
export interface WriteOutcome<Result> {
  result: Result
  pending: boolean
}

/** The node's providers. */
export type ProviderDirectory = Awaited<ReturnType<typeof createProviderDirectory>>

/** How long a write waits for Postgres before it is applied locally and left queued. */
const WRITE_WAIT_MS = 2_000

/** Builds the directory from the store's current providers. */
export async function createProviderDirectory(components: DirectoryComponents, init: DirectoryInit = {}) {
  const { store, queue, logger, env } = components
  let sources = new Map<string, ProviderSource>()
  let registry = createRegistry([])

  const rebuild = (next: Map<string, ProviderSource>) => {
    sources = next
    const providers = resolveProviders([...next.values()], env, (problem) => logger.warn(problem))
    registry = createRegistry(providers, registry)
    init.onChange?.(registry)
  }

  const reload = async () => {
    const stored = await store.listProviders()
    rebuild(new Map(stored.map((provider) => [provider.name, toSource(provider)])))
  }

  /** Runs a store write; if Postgres does not answer within WRITE_WAIT_MS, applies `local` and leaves the write queued. */
  const write = async <Result>(description: string, run: () => Promise<Result>, local: () => Result): Promise<WriteOutcome<Result>> => {
    const landed = queue.enqueue(description, run)
    const first = await atMost(WRITE_WAIT_MS, landed.then((result) => ({ result })))
    if (first !== undefined) {
      // Read our own write back before answering; if that fails, the write landed: applied here, never a 500.
      await reload().catch((error: unknown) => {
        logger.warn({ err: error, write: description }, 'the write landed but the store could not be read back: applied here')
        local()
      })
      return { result: first.result, pending: false }
    }
    logger.warn({ write: description }, 'Postgres is not answering: applied here, the write is queued until it lands')
    landed.then(
      () => logger.info({ write: description }, 'queued write landed'),
      (error: unknown) => logger.error({ write: description, err: error }, 'queued write was refused by Postgres'),
    )
    return { result: local(), pending: true }
  }

  /** A provider written here while Postgres is away. */
  const putLocally = (applied: ProviderSource) => {
    rebuild(new Map(sources).set(applied.name, applied))
    return applied
  }

  // One write emits several events: coalesce them into one reload at a time.
  let reloading: Promise<void> | null = null
  let again = false
  const onChange = () => {
    if (reloading) {
      again = true
      return
    }
    reloading = reload()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not reload providers from the store; serving the last known ones'))
      .finally(() => {
        reloading = null
        if (again) {
          again = false
          onChange()
        }
      })
  }
  const offStore = store.on((change) => {
    if (change.type !== 'settings:changed') onChange()
  })

  try {
    await reload()
  } catch (error) {
    if (init.fallback === undefined) throw error
    logger.warn({ err: error }, 'could not read providers from the store: serving the ones in config.json until it answers')
    rebuild(new Map(init.fallback.map((source) => [source.name, withIds(source, undefined)])))
  }

  return {
    /** The registry the request path reads; replaced (not mutated) on every change. */
    get registry(): ProviderRegistry {
      return registry
    },
    list: () => [...sources.values()],
    get: (name: string) => sources.get(name),
    create: (source: ProviderSource) => write(`create provider ${source.name}`, async () => toSource(await store.createProvider(source)), () => putLocally(withIds(source, undefined))),
    replace: (source: ProviderSource) => write(`replace provider ${source.name}`, async () => toSource(await store.upsertProvider(source)), () => putLocally(withIds(source, sources.get(source.name)))),
    remove: (name: string) =>
      write(`delete provider ${name}`, () => store.deleteProvider(name), () => {
        const next = new Map(sources)
        const existed = next.delete(name)
        rebuild(next)
        return existed
      }),
    reload,
    async close() {
      offStore()
      await reloading
      await registry.close()
    },
  }
}

/** A stored provider as the API and the resolver see it (no row metadata). */
function toSource(provider: StoredProvider): ProviderSource {
  const { type: _type, updated_at: _updatedAt, keys, ...source } = provider
  // The store keeps what the schema checked on the way in: its key configs are ProviderSource's.
  return { ...source, keys: keys.map(({ provider: _provider, updated_at: _keyUpdatedAt, ...key }) => key) } as ProviderSource
}

/** Ids for keys without one, and a redacted value sent back keeping the real one (the store's rules, applied locally). */
function withIds(source: ProviderSource, previous: ProviderSource | undefined): ProviderSource {
  return {
    ...source,
    keys: source.keys.map((key) => {
      const id = key.id ?? deriveKeyId(source.name, key.name)
      return { ...keepSecrets(key, previous?.keys.find((candidate) => candidate.id === id)), id }
    }),
  }
}
