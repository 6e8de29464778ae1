/**
 * @switchboard/gateway — one Switchboard node: the OpenAI-compatible inference API over
 * the provider adapters, with retries, key rotation and fallbacks; and the CLI.
 */
import { serve, type ServerType } from '@hono/node-server'
import pino, { type Logger } from 'pino'
import type { AddressInfo } from 'node:net'
import type { Cancellation } from '@switchboard/providers'
import type { GatewayConfig } from './config/load.ts'
import { createApp } from './http/app.ts'
import { createRegistry } from './inference/registry.ts'

export { loadConfig, parseConfig, ConfigError, type GatewayConfig } from './config/load.ts'
export { GatewayError, ERROR_CODES } from './errors.ts'

export interface GatewayInit {
  config: GatewayConfig
  port: number
  host?: string
  logger?: Logger
}

/** A running node. */
export interface Gateway {
  url: string
  port: number
  close(): Promise<void>
}

/** Starts a gateway node listening on host:port (port 0 picks a free one). */
export async function startGateway(init: GatewayInit): Promise<Gateway> {
  const logger = init.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'info' })
  const registry = createRegistry(init.config.providers)
  const app = createApp(
    {
      registry,
      logger,
      now: Date.now,
      random: Math.random,
      sleep: cancellableSleep,
    },
    { maxRequestBodyBytes: init.config.maxRequestBodyBytes },
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
      await registry.close()
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
