/**
 * The deadlines of one attempt (issue 35), from the provider's network_config, the request's
 * own headers, and defaults. A stream has four: connect (the provider's pool), response
 * headers, first content event, and silence inside the stream; a JSON answer has one, for the
 * whole answer. A deadline hit is a timeout of the route, never the caller's fault.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { ProviderNetwork } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'

/** Time to the first content event when the provider does not say and something else could take the request. */
export const DEFAULT_FIRST_TOKEN_MS = 10_000
/** Longest silence inside a stream when the provider does not say. */
export const DEFAULT_STREAM_IDLE_MS = 60_000

/** A provider's deadlines as network_config sets them (ms); null where it sets none. */
export interface ProviderDeadlines {
  requestMs: number
  firstTokenMs: number | null
  idleMs: number
}

/** What a request's headers set (`x-bf-request-timeout`, `x-bf-first-token-timeout`, `x-bf-stream-idle-timeout`, in seconds). */
export interface RequestDeadlines {
  requestMs?: number
  firstTokenMs?: number
  idleMs?: number
}

/** The deadlines one attempt runs under. */
export interface AttemptDeadlines {
  /** Response headers of a stream (bounded by the first-token deadline too), or the whole JSON answer. */
  requestMs: number
  /** A stream's first content event, from the attempt's start; null for none. */
  firstTokenMs: number | null
  idleMs: number
}

/** The deadlines network_config sets for a provider. */
export function providerDeadlines(network: ProviderNetwork): ProviderDeadlines {
  return {
    requestMs: network.default_request_timeout_in_seconds * 1000,
    firstTokenMs: network.first_token_timeout_in_seconds === undefined ? null : network.first_token_timeout_in_seconds * 1000,
    idleMs: (network.stream_idle_timeout_in_seconds ?? DEFAULT_STREAM_IDLE_MS / 1000) * 1000,
  }
}

/**
 * One attempt's deadlines. The first-token deadline set by nobody applies only while something
 * else could take the request (`alternatives`: another key or target): waiting out a slow start
 * is then the only way to an answer, bounded by the idle deadline.
 */
export function attemptDeadlines(provider: ProviderDeadlines, request: RequestDeadlines | undefined, alternatives: boolean): AttemptDeadlines {
  const firstTokenMs = request?.firstTokenMs ?? provider.firstTokenMs ?? (alternatives ? DEFAULT_FIRST_TOKEN_MS : null)
  return { requestMs: request?.requestMs ?? provider.requestMs, firstTokenMs, idleMs: request?.idleMs ?? provider.idleMs }
}

const HEADERS = [
  ['x-bf-request-timeout', 'requestMs'],
  ['x-bf-first-token-timeout', 'firstTokenMs'],
  ['x-bf-stream-idle-timeout', 'idleMs'],
] as const

/** The deadlines a request sets by header, or undefined; a value that is not a number of seconds is a 400 naming the header. */
export function readDeadlineHeaders(headers: IncomingHttpHeaders): RequestDeadlines | undefined {
  let found: RequestDeadlines | undefined
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
