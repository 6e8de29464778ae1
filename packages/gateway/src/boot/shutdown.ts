/** The parts of a node's shutdown that are not wiring: the drain, named steps, bounded waits. */
import type { Server } from 'node:http'
import type { Logger } from 'pino'

/**
 * Stops taking connections and lets in-flight requests finish within `drainMs`, closing idle
 * keep-alive connections as they free up; whatever is still open at the bound is cut.
 */
export async function drainServer(server: Server, drainMs: number, logger: Logger): Promise<void> {
  const drained = new Promise<void>((resolve) => server.close(() => resolve()))
  const idle = setInterval(() => server.closeIdleConnections(), 100)
  const bound = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), drainMs).unref())
  if ((await Promise.race([drained, bound])) === 'timeout') {
    logger.warn('drain bound reached: closing the connections still open')
    server.closeAllConnections()
    await drained
  }
  clearInterval(idle)
}

/** Runs one step; a step still running after 2 s is logged, so a stop that reaches the CLI's bound says where it waited. */
export async function shutdownStep(logger: Logger, name: string, run: () => Promise<unknown>): Promise<void> {
  const slow = setTimeout(() => logger.warn({ step: name }, `shutdown: still waiting on ${name} after 2 s`), 2_000).unref()
  try {
    await run()
  } finally {
    clearTimeout(slow)
  }
}

/** Waits for `work`, at most `ms`. */
export function atMost(ms: number, work: Promise<unknown>): Promise<unknown> {
  return Promise.race([work, new Promise((resolve) => setTimeout(resolve, ms).unref())])
}
