/** The first part of a node's boot (issue 37): listening before anything else, so a probe tells booting from dead. */
import type { AddressInfo } from 'node:net'
import type { Server as HttpServer } from 'node:http'
import type { GatewayInit } from './init.ts'
import { parseAdminTokens, type AdminToken } from '../access/tokens.ts'
import { startingReport, type DatabaseHealth } from '../directory/health.ts'
import { createGuardedServer } from '../http/connections.ts'
import { createEarlyListener, type SwitchableListener } from '../http/early.ts'
import { createMetrics, type Metrics } from '../observability/metrics.ts'
import { checkExposure } from './exposure.ts'
import { ReadinessState, startingError } from './readiness.ts'
import { Parts } from './parts.ts'

/** What the early part of boot hands to the rest: the node is listening, and /health reads `readiness` and then `health`. */
export interface Listening {
  adminTokens: AdminToken[]
  readiness: ReadinessState
  metrics: Metrics
  early: SwitchableListener
  server: HttpServer
  /** Known once listening (`open`). */
  port: number
  url: string
  /** Listens now, if it did not at once (`listenLate`). */
  open(): Promise<void>
  /** Gives /health the database watcher once there is a pool to watch. */
  watching(health: DatabaseHealth): void
  /** What the boot started, stopped newest first at shutdown and by a failed boot (boot/parts.ts). */
  parts: Parts
  /** A failed boot: stops listening and undoes what outlives the process (the embedded Postgres is a process of its own). */
  abandon(): Promise<void>
}

/** Listens with the early listener (/health says starting); with `listenLate`, only once `open` is called. */
export async function listenEarly(init: GatewayInit): Promise<Listening> {
  const { logger, host } = init
  const adminTokens = [...init.config.adminTokens, ...parseAdminTokens(init.env.SWITCHBOARD_ADMIN_TOKENS)]
  checkExposure(host, adminTokens.length, init.insecure === true, logger)
  const readiness = new ReadinessState()
  let health: DatabaseHealth | undefined
  const metrics = createMetrics()
  const early = createEarlyListener(() => health?.report() ?? startingReport(readiness), () => startingError(readiness.get()))
  const server = createGuardedServer(early.listener, init.config.connections, () => metrics.connectionsEvicted.inc())
  const parts = new Parts(logger)
  const listen = async () => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(init.port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    listening.port = (server.address() as AddressInfo).port
    listening.url = `http://${host.includes(':') ? `[${host}]` : host}:${listening.port}`
    init.onListening?.(listening.url)
  }
  const listening: Listening = {
    adminTokens, readiness, metrics, early, server, parts,
    port: init.port,
    url: '',
    open: () => (server.listening ? Promise.resolve() : listen()),
    watching: (watcher) => (health = watcher),
    async abandon() {
      server.close()
      server.closeAllConnections()
      await parts.stop()
    },
  }
  if (!init.listenLate) await listen()
  return listening
}
