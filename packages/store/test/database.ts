/** A fresh database per test file, so files run in parallel without seeing each other's rows. */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import { createPool } from '../src/index.ts'

/** A fresh, empty database and a pool on it. */
export interface TestDatabase {
  url: string
  pool: pg.Pool
  /** Closes the pool and drops the database. */
  drop(): Promise<void>
}

/** Creates an empty database on the run's server (`serverUrl` to use another). */
export async function createTestDatabase(serverUrl: string = inject('databaseUrl')): Promise<TestDatabase> {
  const name = `store_test_${randomBytes(6).toString('hex')}`
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`)
  const url = withDatabase(serverUrl, name)
  const pool = createPool({ url, max: 5 })
  return {
    url,
    pool,
    async drop() {
      await pool.end()
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    },
  }
}

/** The same server URL pointing at another database. */
export function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl)
  url.pathname = `/${database}`
  return url.toString()
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}
