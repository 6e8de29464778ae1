/** One transaction on one pooled connection: committed, or rolled back and the connection discarded. */
import type { ClientBase, Pool } from 'pg'

/** Runs `work` inside BEGIN/COMMIT, holding the advisory lock `lock` (when given) to the end; on failure rolls back and rethrows. */
export async function inTransaction<Result>(pool: Pool, work: (client: ClientBase) => Promise<Result>, lock?: number): Promise<Result> {
  const client = await pool.connect()
  let failed = false
  try {
    await client.query('BEGIN')
    if (lock !== undefined) await client.query('SELECT pg_advisory_xact_lock($1)', [lock])
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    failed = true
    await client.query('ROLLBACK').catch(() => {})
    throw error
  } finally {
    // After a failure the connection may be the broken one (server gone): discard it.
    client.release(failed)
  }
}
