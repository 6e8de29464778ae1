/** A `pg` pool set up the way every node needs it. */
import pg from 'pg'

/** A node's database pool, as the packages above the store see it (they import no `pg`). */
export type DatabasePool = pg.Pool

/** Options of `createPool`. */
export interface PoolInit {
  url: string
  /** Most connections this node opens; default 10. */
  max?: number
  /**
   * Connections to open together right away (default none): pg opens one only when every open
   * one is busy, so reads that overlap each wait for a connection of their own in turn (a
   * backend forked and a SCRAM exchange, 15-20 ms each). Failures are left to the first query.
   */
  open?: number
  log?: (line: string) => void
}

/**
 * Creates a pool that survives the database going away: an idle connection
 * dropped by a restarting server is reported, not thrown (pg would otherwise
 * crash the process with an unhandled 'error'), and connecting gives up after
 * 5 s so a write can be queued for retry instead of hanging.
 */
export function createPool(init: PoolInit): pg.Pool {
  const pool = new pg.Pool({
    connectionString: init.url,
    max: init.max ?? 10,
    connectionTimeoutMillis: 5_000,
    application_name: 'switchboard',
  })
  pool.on('error', (error) => init.log?.(`database connection lost: ${error.message}`))
  // A connection checked out of the pool has no 'error' listener of pg's own, so a
  // server that goes away mid-transaction (or mid-write of a recorder) would crash the
  // node. Its queries already reject, and the pool discards it on release (it is no
  // longer queryable), so the event itself carries nothing to act on.
  pool.on('connect', (client) => client.on('error', () => {}))
  for (let opened = 0; opened < Math.min(init.open ?? 0, init.max ?? 10); opened += 1) {
    pool.connect().then((client) => client.release(), () => {})
  }
  return pool
}
