/** What a node is started with (the CLI's flags) and what it hands back. */
import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/load.ts'
import type { FleetInit } from '../fleet/fleet.ts'
import type { Siblings } from '../workers/siblings.ts'

export interface GatewayInit {
  config: GatewayConfig
  port: number
  host: string
  /** Postgres URL; without one the node starts (or joins) the embedded server under `dataDir`. */
  databaseUrl?: string
  /** Where the embedded Postgres lives; default `<cwd>/.switchboard/postgres`. */
  dataDir?: string
  env: NodeJS.ProcessEnv
  logger: Logger
  nodeId: string
  /** The fleet this node joins; without a fleet secret it runs standalone. */
  fleet: Omit<FleetInit, 'nodeId' | 'host'>
  /** Start on a non-loopback address without admin tokens (`--insecure`); warns at every start. */
  insecure?: boolean
  /** Called once the HTTP server listens, early in boot: /health answers `starting` from then on. */
  onListening?(url: string): void
  /** This process is one of the node's workers (`--workers N`): its link to the others. */
  siblings?: Siblings
  /** Listen only once wired (a worker started later): the primary hands connections only to listening workers. */
  listenLate?: boolean
}

/** A running node. */
export interface Gateway {
  url: string
  port: number
  /** Drains (stops accepting, finishes in-flight requests within `drainMs`, default 20 s) and stops. */
  close(options?: { drainMs?: number }): Promise<void>
}
