/** The parts of a node's shutdown that are not wiring: the drain, named steps, bounded waits. */
import type { Server } from 'node:http'
import type { Logger } from 'pino'

/** Stops taking connections, lets in-flight requests finish within `drainMs` (idle ones closed as they free up), then cuts the rest. */
export async function drainServer(server: Server, drainMs: number, logger: Logger): Promise<void> {
  const drained = new Promise<void>((resolve) => server.close(() => resolve()))
  const idle = setInterval(() => server.closeIdleConnections(), 100)
  if ((await atMost(drainMs, drained.then(() => 'drained' as const))) === undefined) {
    logger.warn('drain bound reached: closing the connections still open')
    server.closeAllConnections()
    await drained
  }
  clearInterval(idle)
}

/** Runs one shutdown step for at most `boundMs`: slow is logged at 2 s, a failure is logged, and a step still running at its bound is logged and left behind. */
export async function shutdownStep(logger: Logger, name: string, run: () => Promise<unknown>, boundMs = 3_000): Promise<void> {
  // Two thirds into a short bound, so "still waiting" and "gave up" are two moments, not one.
  const slowMs = Math.min(2_000, Math.round((boundMs * 2) / 3))
  const slow = setTimeout(() => logger.warn({ step: name }, `shutdown: still waiting on ${name} after ${slowMs / 1000} s`), slowMs).unref()
  try {
    const ended = run().catch((error: unknown) => logger.warn({ err: error, step: name }, `shutdown: ${name} failed`))
    const outcome = await atMost(boundMs, ended.then(() => 'done' as const))
    if (outcome !== 'done') logger.warn({ step: name }, `shutdown: gave up on ${name} after ${boundMs / 1000} s`)
  } finally {
    clearTimeout(slow)
  }
}

/** Waits for `work`, at most `ms`. */
export function atMost<Result>(ms: number, work: Promise<Result>): Promise<Result | undefined> {
  let bound: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => {
    bound = setTimeout(() => resolve(undefined), ms).unref()
  })
  return Promise.race([work, timeout]).finally(() => clearTimeout(bound))
}
