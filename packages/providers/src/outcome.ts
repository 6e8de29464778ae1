/**
 * The one normalized outcome of an adapter's `send`, built here for every adapter alike: a
 * success with its usage and the key's rate-limit state, a failure, a body never sent (`notSent`).
 */
import { TranslationError } from './anthropic/errors.ts'
import { attemptFailure } from './errors/classify.ts'
import { readRateLimitExhaustion } from './http/rate-limit.ts'
import { failureOf, type BufferedResponse } from './http/transport.ts'
import type { AttemptFailed, JsonSuccess, StreamSuccess } from './types.ts'
import { readUsage, usageOf } from './usage.ts'

/** A JSON success from the upstream's own bytes (passed through unparsed). */
export function jsonBytes(status: number, headers: Record<string, string>, bytes: Buffer, now: number): JsonSuccess {
  return { ok: true, kind: 'json', status, headers, bytes, usage: readUsage(bytes), rateLimit: readRateLimitExhaustion(headers, now) }
}

/** A stream success: `events` must reject with a StreamFailure when the stream breaks (see `normalizedEvents`). */
export function streamOf(status: number, headers: Record<string, string>, events: AsyncIterable<string>, now: number): StreamSuccess {
  return { ok: true, kind: 'stream', status, headers, events, rateLimit: readRateLimitExhaustion(headers, now) }
}

/** A 2xx whose body cannot be read: `unknown` for every adapter alike (not the key's fault, not the caller's). */
export function malformedSuccess(status: number, headers: Record<string, string>, what: string): AttemptFailed {
  return { ok: false, failure: attemptFailure('unknown', status, `The upstream answered ${status} with ${what}`, 'upstream_malformed'), headers }
}

/** A buffered answer translated into a chat completion; a body not JSON, or refused by `translate`, is a malformed success. */
export function translatedAnswer(response: BufferedResponse, now: () => number, translate: (parsed: unknown) => Record<string, unknown>, what: string): JsonSuccess | AttemptFailed {
  const text = response.body.toString('utf8')
  if (response.statusCode < 200 || response.statusCode >= 300) return failureOf(response.statusCode, response.headers, text, now)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return malformedSuccess(response.statusCode, response.headers, 'a body that is not JSON')
  }
  try {
    const body = translate(parsed)
    return { ok: true, kind: 'json', status: response.statusCode, headers: response.headers, body, usage: usageOf(body.usage), rateLimit: readRateLimitExhaustion(response.headers, now()) }
  } catch (error) {
    return malformedSuccess(response.statusCode, response.headers, error instanceof Error ? error.message : what)
  }
}

/** A body that cannot be said in this provider's format (or a surface it does not serve): the caller's 400, no attempt. */
export function notSent(error: TranslationError): AttemptFailed {
  return { ok: false, notSent: true, failure: attemptFailure('caller_fault', 400, error.message, error.code), headers: {} }
}

/** True for a TranslationError that is the caller's (the body), not the upstream's (its answer). */
export function isCallerTranslationError(error: unknown): error is TranslationError {
  return error instanceof TranslationError && error.code !== 'upstream_malformed'
}

export { StreamFailure, streamFailureOf, normalizedEvents } from './http/stream-failure.ts'
