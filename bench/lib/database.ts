/**
 * A bench's own database: the embedded PostgreSQL under bench/results/<bench>/ (or the server
 * of DATABASE_URL), and on it a fresh, migrated database for one run, dropped at the end.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type pg from 'pg'
import { createPool, ensureDatabase, migrate } from '@switchboard/store'

export interface BenchServer {
  /** The server's connection URL (its `postgres` database). */
  url: string
  /** A pool on the server's `postgres` database, to create and drop databases. */
  admin: pg.Pool
  /** Where the embedded server keeps its data (unused with DATABASE_URL). */
  dataDir: string
  /** Ends the admin pool and lets the embedded server stop. */
  close(): Promise<void>
}

/** Starts (or joins) the bench's server: embedded under `resultsDir`/postgres on `port`, or DATABASE_URL's. */
export async function openBenchServer(resultsDir: string, port: number): Promise<BenchServer> {
  mkdirSync(resultsDir, { recursive: true })
  const dataDir = join(resultsDir, 'postgres')
  const database = await ensureDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir, port })
  const admin = createPool({ url: database.url })
  return {
    url: database.url,
    admin,
    dataDir,
    async close() {
      await admin.end()
      await database.release()
    },
  }
}

/** Creates database `name` on `server`, migrated, and a pool on it. */
export async function createBenchDatabase(server: Pick<BenchServer, 'url' | 'admin'>, name: string): Promise<pg.Pool> {
  await server.admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(server.url)
  url.pathname = `/${name}`
  const pool = createPool({ url: url.toString() })
  await migrate(pool)
  return pool
}

/** Ends `pool` and drops its database `name` (a failed drop is left: the next run takes a new name). */
export async function dropBenchDatabase(server: Pick<BenchServer, 'admin'>, pool: pg.Pool, name: string): Promise<void> {
  await pool.end()
  await server.admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
}
