/**
 * Holds a streaming caller's connection open while the first-chunk gate waits (issue 35): the
 * 200 and the first event go out only once an upstream produced content, but a caller left
 * without a byte for long gives up (or its proxy does). After `waitMs` without an answer, the
 * 200 goes out with SSE comments every `everyMs`, which every SSE client ignores; the gateway
 * can still fail over, since no event was sent. An error after that point is written as the
 * surface's in-band error event (the renderers and error writers check `committed`).
 */
import type { ServerResponse } from 'node:http'
import type { GatewayError } from '../errors.ts'
import { sseHeaders, type StreamFraming } from '../inference/render.ts'

/** How long a stream's caller waits without a byte before its 200 and keep-alive comments go out. */
export const STREAM_HOLD_MS = 3_000
/** How often a held connection gets a keep-alive comment. */
export const KEEP_ALIVE_EVERY_MS = 5_000

/** A held connection. */
export interface StreamHold {
  /** True once the 200 went out ahead of the answer. */
  readonly committed: boolean
  /** Stops the timers (the answer is about to be written). */
  release(): void
}

const KEEP_ALIVE = ': keep-alive\n\n'

/** Starts holding `outgoing` (whose `x-request-id` is `requestId`). */
export function holdStream(outgoing: ServerResponse, requestId: string, waitMs = STREAM_HOLD_MS, everyMs = KEEP_ALIVE_EVERY_MS): StreamHold {
  let committed = false
  let interval: NodeJS.Timeout | null = null
  const beat = () => {
    if (!outgoing.destroyed) outgoing.write(KEEP_ALIVE)
  }
  const timer = setTimeout(() => {
    if (outgoing.headersSent || outgoing.destroyed) return
    committed = true
    outgoing.writeHead(200, sseHeaders({ 'x-request-id': requestId }))
    beat()
    interval = setInterval(beat, everyMs)
  }, waitMs)
  return {
    get committed() {
      return committed
    },
    release() {
      clearTimeout(timer)
      if (interval !== null) clearInterval(interval)
    },
  }
}

/** Ends a held stream with the surface's in-band error event (no event was sent before it). */
export function endHeldStream(outgoing: ServerResponse, framing: StreamFraming, error: GatewayError): void {
  if (outgoing.writableEnded || outgoing.destroyed) return
  outgoing.write(framing.error(error.message, error.code, error.extraFields))
  outgoing.end(framing.end)
}
