/** One upstream attempt with its deadline, telling a timeout and a caller's cancel apart. */
import { Cancellation, cancelledFailure, sendSurface, timeoutFailure, type AttemptResult, type ChatRequestBody, type ProviderKey, type Surface } from '@switchboard/providers'
import type { ProviderRuntime } from './registry.ts'

/** A request on a surface other than chat completions (http/messages.ts, responses.ts, ...). */
export interface SurfaceCall {
  surface: Surface
  stream: boolean
  /** A fresh copy of the caller's body per attempt: adapters set its `model`. */
  bodyFor(): Record<string, unknown>
  /** Caller headers a native upstream gets unchanged. */
  headers: Record<string, string>
  /** Only upstreams that speak the surface natively may serve it (a stored conversation). */
  nativeOnly?: boolean
}

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
 * Sends one attempt. `deadlineMs` covers a JSON answer whole, a stream up to its headers (the
 * guard keeps its deadlines). A `notSent` result comes back as it is: the engine answers 400.
 */
export async function runAttempt(
  provider: ProviderRuntime,
  body: ChatRequestBody,
  model: string,
  key: ProviderKey,
  caller: Cancellation,
  deadlineMs: number,
  surface?: SurfaceCall,
  /** The attempt's W3C trace context, sent upstream as `traceparent` (tracing on). */
  traceparent?: string,
): Promise<AttemptRun> {
  const cancellation = new Cancellation()
  cancellation.follow(caller)
  if (cancellation.aborted) return new AttemptRun({ ok: false, failure: cancelledFailure(), headers: {} }, cancellation, caller)
  const timer = setTimeout(expire, deadlineMs, cancellation)
  let result: AttemptResult
  try {
    result = surface === undefined
      ? await provider.adapter.send({ body, model, key, signal: cancellation, traceparent })
      : await sendSurface(provider.adapter, { surface: surface.surface, body: surface.bodyFor(), model, key, signal: cancellation, traceparent, stream: surface.stream, headers: surface.headers })
  } catch (error) {
    // Adapters resolve to an outcome; only a bug in one throws.
    clearTimeout(timer)
    cancellation.unfollow(caller)
    throw error
  }
  clearTimeout(timer)
  if (!result.ok && cancellation.aborted) {
    result = { ok: false, failure: cancellation.reason === 'timeout' ? timeoutFailure(deadlineMs) : cancelledFailure(), headers: result.headers }
  }
  // A stream still needs the caller's cancel linked to the upstream until it ends; the renderer calls abort.
  if (!result.ok || result.kind === 'json') cancellation.unfollow(caller)
  return new AttemptRun(result, cancellation, caller)
}
