/**
 * @switchboard/gateway — one Switchboard node: the OpenAI-compatible inference API over
 * the provider adapters (retries, key rotation, fallbacks), the admin API over the config
 * store in Postgres, and the CLI.
 */
import { serve, type ServerType } from '@hono/node-server'
import pino, { type Logger } from 'pino'
import type { AddressInfo } from 'node:net'
import type { Cancellation } from '@switchboard/providers'
import { createConfigStore, createPool, createWriteQueue, ensureDatabase, migrate } from '@switchboard/store'
import type { GatewayConfig } from './config/load.ts'
import { createApp } from './http/app.ts'
import { createProviderDirectory } from './directory/directory.ts'
import { watchDatabase } from './directory/health.ts'
import { parseAdminTokens } from './admin/auth.ts'

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
}

/** A running node. */
export interface Gateway {
  url: string
  port: number
  close(): Promise<void>
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
  const directory = await createProviderDirectory({ store, queue, logger, env })
  const health = watchDatabase({ pool, queue }, { onChange: (report) => logger.warn({ health: report }, `health: ${report.status}`) })
  if (adminTokens.length === 0) logger.warn('no admin tokens configured: the admin API answers loopback clients only (set SWITCHBOARD_ADMIN_TOKENS)')

  const app = createApp(
    {
      get registry() {
        return directory.registry
      },
      directory,
      health,
      logger,
      now: Date.now,
      random: Math.random,
      sleep: cancellableSleep,
    },
    { maxRequestBodyBytes: init.config.maxRequestBodyBytes, adminTokens, env },
  )
  const host = init.host ?? '127.0.0.1'
  const server = await new Promise<ServerType>((resolve, reject) => {
    const listening = serve({ fetch: app.fetch, port: init.port, hostname: host }, () => resolve(listening))
    listening.once('error', reject)
  })
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      health.close()
      await Promise.race([queue.drained(), new Promise((resolve) => setTimeout(resolve, 2_000))])
      queue.close()
      await directory.close()
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
