/** How a stream that had started ends badly, normalized for routing: every adapter's `events` rejects with a StreamFailure. */
import type { AttemptFailure } from '@switchboard/routing'
import { TranslationError } from '../anthropic/errors.ts'
import { attemptFailure, networkFailure } from '../errors/classify.ts'

/** An upstream's in-band stream error (`data: {"error": ...}`, Anthropic's `error` event, Bedrock's exception frame), which ends the stream. */
export class UpstreamStreamError extends Error {
  override readonly name = 'UpstreamStreamError'
  readonly code = 'upstream_stream_error'
  constructor(message: string, readonly providerCode: string | null) {
    super(message)
  }
}

const BROKE = 'the stream broke: '

/** How a stream that had started ended badly; what a stream's `events` reject with. */
export class StreamFailure extends Error {
  override readonly name = 'StreamFailure'
  constructor(readonly failure: AttemptFailure) {
    // The error's own message is what the upstream said (the renderer says the stream broke).
    super(failure.message.startsWith(BROKE) ? failure.message.slice(BROKE.length) : failure.message)
  }
}

/** A stream that broke after it started (status 200): an in-band rate limit is `rate_limit`, an unreadable one `unknown`, the rest `transient`. */
export function streamFailureOf(error: unknown): AttemptFailure {
  if (error instanceof StreamFailure) return error.failure
  if (error instanceof TranslationError) return attemptFailure('unknown', 200, `the stream broke: ${error.message}`, 'upstream_malformed')
  const inBand = error instanceof UpstreamStreamError
  // A cut connection says its errno code only (an error's message can carry the URL).
  const { code, message } = inBand ? { code: error.providerCode, message: error.message } : networkFailure(error)
  // The upstream call was aborted on our side (the caller left, the gateway stopped it): nobody's fault.
  if (!inBand && (code === 'UND_ERR_ABORTED' || (error instanceof Error && error.name === 'AbortError'))) return attemptFailure('cancelled', 200, 'the stream was stopped on our side', code)
  // Bedrock's in-band throttlingException and Gemini's RESOURCE_EXHAUSTED are rate limits too.
  const failureClass = code !== null && /rate_limit|throttling|resource_exhausted/i.test(code) ? 'rate_limit' : 'transient'
  return attemptFailure(failureClass, 200, `the stream broke: ${message}`, code)
}

/** Wraps a stream's events so that whatever breaks it rejects as a StreamFailure (one generator hop per event). */
export async function* normalizedEvents(events: AsyncIterable<string>): AsyncGenerator<string> {
  try {
    yield* events
  } catch (error) {
    throw error instanceof StreamFailure ? error : new StreamFailure(streamFailureOf(error))
  }
}
