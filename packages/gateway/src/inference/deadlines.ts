/**
 * The deadlines a provider's network_config and a request's headers set (issue 35). Which one
 * an attempt runs under is routing's rule (`attemptDeadlines` in @switchboard/routing).
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { ProviderNetwork } from '@switchboard/providers'
import type { DeadlineSettings } from '@switchboard/routing'
import { GatewayError } from '../errors.ts'

/** A provider's deadlines as network_config sets them (ms). */
export type ProviderDeadlines = DeadlineSettings & { requestMs: number }

/** The deadlines network_config sets for a provider. */
export function providerDeadlines(network: ProviderNetwork): ProviderDeadlines {
  const deadlines: ProviderDeadlines = { requestMs: network.default_request_timeout_in_seconds * 1000 }
  if (network.first_token_timeout_in_seconds !== undefined) deadlines.firstTokenMs = network.first_token_timeout_in_seconds * 1000
  if (network.stream_idle_timeout_in_seconds !== undefined) deadlines.idleMs = network.stream_idle_timeout_in_seconds * 1000
  return deadlines
}

const HEADERS = [
  ['x-bf-request-timeout', 'requestMs'],
  ['x-bf-first-token-timeout', 'firstTokenMs'],
  ['x-bf-stream-idle-timeout', 'idleMs'],
] as const

/** The deadlines a request sets by header, or undefined; a value that is not a number of seconds is a 400 naming the header. */
export function readDeadlineHeaders(headers: IncomingHttpHeaders): DeadlineSettings | undefined {
  let found: DeadlineSettings | undefined
  for (const [name, field] of HEADERS) {
    const value = headers[name]
    if (value === undefined) continue
    const seconds = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : Number.NaN
    if (!(seconds > 0 && seconds <= 3600)) {
      throw new GatewayError('invalid_request', `Header ${name} must be a number of seconds above 0 and at most 3600 (got "${String(value)}").`, { param: name })
    }
    ;(found ??= {})[field] = seconds * 1000
  }
  return found
}
