/** A node listening beyond loopback with no admin tokens would give its admin API to anyone: checked first at boot. */
import type { Logger } from 'pino'
import { isLoopback } from '../access/network.ts'

/** The error a node refuses to start with when it would be reachable from other hosts with no admin tokens. */
export class ExposedError extends Error {
  readonly code = 'exposed_without_tokens'
}

/** True for addresses only this host can reach (the default 127.0.0.1, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || isLoopback(host)
}

/** Refuses to start beyond loopback with no admin tokens unless `--insecure` says so, and then warns. */
export function checkExposure(host: string, tokens: number, insecure: boolean, logger: Logger): void {
  if (tokens > 0 || isLoopbackHost(host)) return
  if (!insecure) {
    throw new ExposedError(
      `refusing to listen on ${host} with no admin tokens: anyone who reaches this address could change the fleet. Set SWITCHBOARD_ADMIN_TOKENS (<token>:update, tokens of at least 16 characters) or admin.tokens in config.json, or pass --insecure to start anyway.`,
    )
  }
  logger.warn(`INSECURE: listening on ${host} with no admin tokens (--insecure). The admin API still answers loopback callers only; set SWITCHBOARD_ADMIN_TOKENS to manage this node remotely.`)
}
