/** One upstream attempt with its deadline, telling a timeout and a caller's cancel apart. */
import { Cancellation, cancelledFailure, timeoutFailure, TranslationError, type AttemptResult, type ChatRequestBody, type ProviderKey } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import type { ProviderRuntime } from './registry.ts'

/** An attempt's result plus the way to abort its upstream call (streams keep it open). */
export class AttemptRun {
  constructor(
    readonly result: AttemptResult,
    private readonly cancellation: Cancellation,
    private readonly caller: Cancellation,
  ) {}

  /** Aborts the upstream call and unlinks it from the caller; safe to call more than once. */
  abort(): void {
    this.cancellation.unfollow(this.caller)
    this.cancellation.abort()
  }
}

/** The deadline timer's callback: a plain function, so no closure is made per attempt. */
function expire(cancellation: Cancellation): void {
  cancellation.abort('timeout')
}

/**
 * Sends one attempt. The deadline covers the whole answer for JSON, and up to the
 * response headers for a stream (a long generation is not a timeout).
 */
export async function runAttempt(
  provider: ProviderRuntime,
  body: ChatRequestBody,
  model: string,
  key: ProviderKey,
  caller: Cancellation,
): Promise<AttemptRun> {
  const cancellation = new Cancellation()
  cancellation.follow(caller)
  if (cancellation.aborted) return new AttemptRun({ ok: false, failure: cancelledFailure(), headers: {} }, cancellation, caller)
  const timer = setTimeout(expire, provider.timeoutMs, cancellation)
  let result: AttemptResult
  try {
    result = await provider.adapter.send({ body, model, key, signal: cancellation })
  } catch (error) {
    clearTimeout(timer)
    cancellation.unfollow(caller)
    // The body cannot be said in this provider's format: the caller must change it.
    if (error instanceof TranslationError && error.code !== 'upstream_malformed') throw new GatewayError('invalid_request', `${provider.name}: ${error.message}`)
    throw error
  }
  clearTimeout(timer)
  if (!result.ok && cancellation.aborted) {
    result = { ok: false, failure: cancellation.reason === 'timeout' ? timeoutFailure(provider.timeoutMs) : cancelledFailure(), headers: result.headers }
  }
  // A stream still needs the caller's cancel linked to the upstream until it ends; the renderer calls abort.
  if (!result.ok || result.kind === 'json') cancellation.unfollow(caller)
  return new AttemptRun(result, cancellation, caller)
}
