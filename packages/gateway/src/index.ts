/**
 * @switchboard/gateway — one Switchboard node: the OpenAI-compatible inference API over
 * the provider adapters (retries, key rotation, fallbacks), the admin API over the config
 * store in Postgres, and the CLI.
 */
import pino, { type Logger } from 'pino'
import type { AddressInfo } from 'node:net'
import { createServer, type Server as HttpServer } from 'node:http'
import type { Cancellation } from '@switchboard/providers'
import { createConfigStore, createPool, createWriteQueue, ensureDatabase, migrate } from '@switchboard/store'
import type { GatewayConfig } from './config/load.ts'
import { createListener } from './http/app.ts'
import { createProviderDirectory, type ProviderDirectory } from './directory/directory.ts'
import { createMetrics } from './observability/metrics.ts'
import { createRouter } from './routing/router.ts'
import { startFleet, type Fleet, type FleetInit } from './fleet/fleet.ts'
import {
  createAdaptiveBalancer,
  createHolds,
  createSessionAffinity,
  defaultLoadBalancerSettings,
  RECOMPUTE_INTERVAL_MS,
  type LoadBalancerSettings,
} from '@switchboard/routing'
import { watchDatabase } from './directory/health.ts'
import { parseAdminTokens } from './admin/auth.ts'
import { startHistoryRecording, type HistoryRecording } from './recording/history.ts'

export { loadConfig, parseConfig, ConfigError, type GatewayConfig } from './config/load.ts'
export { GatewayError, ERROR_CODES } from './errors.ts'

export interface GatewayInit {
  config: GatewayConfig
  port: number
  host?: string
  /** Postgres URL; without one the node starts (or joins) the embedded server under `dataDir`. */
  databaseUrl?: string
  /** Where the embedded Postgres lives; default `<cwd>/.switchboard/postgres`. */
  dataDir?: string
  env?: NodeJS.ProcessEnv
  logger?: Logger
  /** This node's id in the fleet and its logs; default `node-<pid>`. */
  nodeId?: string
  /** The fleet this node joins; without a fleet secret it runs standalone. */
  fleet?: Omit<FleetInit, 'nodeId' | 'host'>
}

/** A running node. */
export interface Gateway {
  url: string
  port: number
  /** Drains (stops accepting, finishes in-flight requests within `drainMs`, default 20 s) and stops. */
  close(options?: { drainMs?: number }): Promise<void>
}

/** Starts a gateway node: database, config import, providers, HTTP on host:port (0 = any free port). */
export async function startGateway(init: GatewayInit): Promise<Gateway> {
  const env = init.env ?? process.env
  const logger = init.logger ?? pino({ level: env.LOG_LEVEL ?? 'info' })
  const adminTokens = [...init.config.adminTokens, ...parseAdminTokens(env.SWITCHBOARD_ADMIN_TOKENS)]

  const database = await ensureDatabase({ databaseUrl: init.databaseUrl, dataDir: init.dataDir, log: (line) => logger.info(line) })
  const pool = createPool({ url: database.url, log: (line) => logger.warn(line) })
  await migrate(pool)
  const store = createConfigStore({ pool }, { onListenerError: (error) => logger.error({ err: error }, 'config store listener failed') })
  const imported = await store.importConfig(init.config.source)
  logger.info({ firstBoot: imported.firstBoot, changes: imported.changes.length }, imported.firstBoot ? 'imported config.json into the config store' : 'applied config.json to the config store')
  const queue = createWriteQueue({ log: (line) => logger.warn(line) })
  const metrics = createMetrics()
  const now = Date.now
  const random = Math.random
  const nodeId = init.nodeId ?? `node-${process.pid}`

  // Routing state: held keys first (the balancer asks them), then the balancer and sessions.
  const holds = createHolds({ nodeId, random })
  // Held keys and rate-limit backoffs both keep a key out of the selection tables.
  const balancer = createAdaptiveBalancer({ providers: [], isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) || router.isBackedOff(provider, keyId, model) })
  const sessions = createSessionAffinity({ capacity: 100_000, idleMs: 60 * 60_000 })
  let settings: LoadBalancerSettings = { ...defaultLoadBalancerSettings, ...(await store.getSettings()).load_balancer_config }
  let directory: ProviderDirectory | undefined
  let fleet: Fleet | undefined
  let history: HistoryRecording | undefined
  const router = createRouter({
    balancer,
    holds,
    sessions,
    metrics,
    logger,
    registry: () => directory!.registry,
    settings: () => settings,
    now,
    random,
    onHoldsChanged: (entries) => {
      fleet?.publishHolds(entries)
      history?.holds(entries, 'local')
    },
    onRateLimited: (signal) => fleet?.publishRateLimit(signal),
  })
  directory = await createProviderDirectory(
    { store, queue, logger, env },
    { onChange: (registry) => balancer.setProviders(registry.list.map((runtime) => ({ provider: runtime.name, keys: runtime.config.keys }))) },
  )
  const providers = directory
  // A key edit releases its holds; a key or provider delete removes them (reference: "Releasing held keys").
  const unsubscribes = [
    store.on('key:changed', (detail) => {
      if (detail.created) return
      const changed = holds.keyEdited(detail.provider, detail.id, now())
      router.released(changed)
      router.settle({ changed, events: [] })
    }),
    store.on('key:deleted', (detail) => router.settle({ changed: holds.keyDeleted(detail.provider, detail.id, now()), events: [] })),
    store.on('provider:deleted', (detail) => router.settle({ changed: holds.providerDeleted(detail.provider, now()), events: [] })),
    // Providers or keys changed here: every node re-reads them from the store.
    ...(['provider:changed', 'provider:deleted', 'key:changed', 'key:deleted'] as const).map((type) => store.on(type, () => fleet?.publishConfig({ kind: 'providers' }))),
    store.on('settings:changed', () => {
      store.getSettings().then(
        (saved) => (settings = { ...defaultLoadBalancerSettings, ...saved.load_balancer_config }),
        (error: unknown) => logger.warn({ err: error }, 'could not read the saved settings'),
      )
    }),
  ]
  const keyName = (provider: string, keyId: string) => providers.registry.get(provider)?.config.keys.find((key) => key.id === keyId)?.name

  // The 5-second recompute, off the hot path; expired tombstones are collected once a minute.
  let cycles = 0
  const recompute = setInterval(() => {
    const at = now()
    if (router.expireBackoffs()) balancer.holdsChanged()
    balancer.recompute(at)
    history?.recomputed()
    if (++cycles % 12 === 0) holds.collect(at)
    metrics.holdsActive.reset()
    for (const condition of holds.conditions()) metrics.holdsActive.inc({ reason: condition.reason })
  }, RECOMPUTE_INTERVAL_MS)
  recompute.unref()

  const region = init.fleet?.region ?? 'default'
  // History (issue 14): records what routing saw and did; never on the request path.
  const configuredHistory = init.config.loadBalancer
  history = await startHistoryRecording(
    { pool, store, balancer, registry: () => providers.registry, settings: () => settings, metrics, logger, now, isLeader: async () => (fleet === undefined ? false : (await fleet.view()).node.leader) },
    {
      nodeId,
      region,
      env,
      configured: {
        ...(configuredHistory.history_enabled !== undefined ? { history_enabled: configuredHistory.history_enabled } : {}),
        ...(configuredHistory.history_retention_days !== undefined ? { history_retention_days: configuredHistory.history_retention_days } : {}),
      },
    },
  )
  const recording = history
  fleet = await startFleet(
    {
      holds,
      router: recording.observeMerges(router),
      pool,
      logger,
      metrics,
      now,
      random,
      reloadProviders: () => providers.reload(),
      applySettings: (next) => {
        settings = next
      },
    },
    { nodeId, host: init.host ?? '127.0.0.1', region, p2pPort: init.fleet?.p2pPort ?? 9000, peers: init.fleet?.peers ?? [], dataDir: init.fleet?.dataDir ?? `.switchboard/nodes/${nodeId}`, ...(init.fleet?.fleetSecret ? { fleetSecret: init.fleet.fleetSecret } : {}) },
  )
  const joined = fleet

  const health = watchDatabase({ pool, queue }, { onChange: (report) => logger.warn({ health: report }, `health: ${report.status}`) })
  if (adminTokens.length === 0) logger.warn('no admin tokens configured: the admin API answers loopback clients only (set SWITCHBOARD_ADMIN_TOKENS)')

  const listener = createListener(
    {
      router,
      directory: providers,
      health,
      clusterView: () => joined.view(),
      metrics,
      logger,
      now,
      random,
      sleep: cancellableSleep,
      recordRequest: (request, served, error) => recording.request(request, served, error),
      history: () => recording.queries,
      adaptive: {
        balancer,
        holds,
        router,
        settings: () => settings,
        async saveSettings(next) {
          settings = next
          joined.publishConfig({ kind: 'settings', settings: next })
          const landed = queue.enqueue('save load balancer settings', () => store.saveSettings(next, 'api'))
          const waited = await Promise.race([landed.then(() => 'landed' as const), new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 2_000).unref())])
          return { pending: waited === 'waiting' }
        },
        keyName,
        now,
        history: { settings: () => ({ ...recording.settings() }), saveSettings: async (values) => ({ ...(await recording.saveSettings(values)) }) },
      },
    },
    { maxRequestBodyBytes: init.config.maxRequestBodyBytes, adminTokens, env },
  )
  const host = init.host ?? '127.0.0.1'
  const server = await new Promise<HttpServer>((resolve, reject) => {
    const listening = createServer(listener)
    listening.once('error', reject)
    listening.listen(init.port, host, () => resolve(listening))
  })
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    async close(options = {}) {
      // Drain: /health turns 503 so load balancers stop sending, no new connections are taken,
      // in-flight requests finish within the bound, then whatever is left is cut.
      health.setDraining()
      const drained = new Promise<void>((resolve) => server.close(() => resolve()))
      const idle = setInterval(() => server.closeIdleConnections(), 100)
      const bound = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), options.drainMs ?? 20_000).unref())
      if ((await Promise.race([drained, bound])) === 'timeout') {
        logger.warn('drain bound reached: closing the connections still open')
        server.closeAllConnections()
        await drained
      }
      clearInterval(idle)
      await joined.stop()
      health.close()
      clearInterval(recompute)
      for (const off of unsubscribes) off()
      await recording.close()
      await Promise.race([queue.drained(), new Promise((resolve) => setTimeout(resolve, 2_000))])
      queue.close()
      await providers.close()
      await pool.end().catch(() => {})
      await database.release()
    },
  }
}

/** setTimeout as a promise that rejects when the cancellation fires first. */
function cancellableSleep(ms: number, cancellation: Cancellation): Promise<void> {
  return new Promise((resolve, reject) => {
    if (cancellation.aborted) return reject(new Error('cancelled'))
    const onAbort = () => {
      clearTimeout(timer)
      reject(new Error('cancelled'))
    }
    const timer = setTimeout(() => {
      cancellation.removeListener('abort', onAbort)
      resolve()
    }, ms)
    cancellation.once('abort', onAbort)
  })
}
