/**
 * Vitest global setup: one PostgreSQL for the whole run. With DATABASE_URL
 * set, that server; otherwise a private embedded server, stopped at the end.
 * Test files get its URL through `inject('databaseUrl')` and each creates its
 * own database on it (see `database.ts`).
 */
import type { TestProject } from 'vitest/node'
import { startPrivateServer } from '@switchboard/test-kit'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the run's PostgreSQL server. */
    databaseUrl: string
  }
}

/** Starts (or adopts) the run's server; the returned function stops it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.DATABASE_URL
  if (external) {
    project.provide('databaseUrl', external)
    return async () => {}
  }
  const server = await startPrivateServer('run')
  project.provide('databaseUrl', server.handle.url)
  return () => server.dispose()
}
