/** One upstream attempt with its deadline, telling a timeout and a caller's cancel apart. */
import { cancelledFailure, timeoutFailure, TranslationError, type AttemptResult, type ChatRequestBody, type ProviderKey } from '@switchboard/providers'
import type { ProviderRuntime } from './registry.ts'
import { GatewayError } from '../errors.ts'

/** An attempt's result plus the controller that owns its upstream call (streams keep it open). */
export interface AttemptRun {
  result: AttemptResult
  /** Aborts the upstream call; for a stream, call it when the caller goes away. */
  abort: () => void
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
  callerSignal: AbortSignal,
): Promise<AttemptRun> {
  const controller = new AbortController()
  const abort = () => controller.abort()
  if (callerSignal.aborted) return { result: { ok: false, failure: cancelledFailure(), headers: {} }, abort }
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, provider.timeoutMs)
  callerSignal.addEventListener('abort', abort, { once: true })
  let result: AttemptResult
  try {
    result = await provider.adapter.send({ body, model, key, signal: controller.signal })
  } catch (error) {
    clearTimeout(timer)
    callerSignal.removeEventListener('abort', abort)
    // The body cannot be said in this provider's format: the caller must change it.
    if (error instanceof TranslationError && error.code !== 'upstream_malformed') throw new GatewayError('invalid_request', `${provider.name}: ${error.message}`)
    throw error
  }
  clearTimeout(timer)
  if (!result.ok && controller.signal.aborted) {
    result = { ok: false, failure: timedOut ? timeoutFailure(provider.timeoutMs) : cancelledFailure(), headers: result.headers }
  }
  // A stream still needs the caller's abort wired to the upstream until it ends; the renderer removes it.
  if (!result.ok || result.kind === 'json') callerSignal.removeEventListener('abort', abort)
  return { result, abort: () => {
    callerSignal.removeEventListener('abort', abort)
    controller.abort()
  } }
}
