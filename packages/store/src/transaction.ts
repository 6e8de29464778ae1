/** One transaction on one pooled connection: committed, or rolled back and the connection discarded. */
import type { ClientBase, Pool } from 'pg'

/** Runs `work` inside BEGIN/COMMIT; on failure rolls back and rethrows. */
export async function inTransaction<Result>(pool: Pool, work: (client: ClientBase) => Promise<Result>): Promise<Result> {
  const client = await pool.connect()
  let failed = false
  try {
    await client.query('BEGIN')
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
