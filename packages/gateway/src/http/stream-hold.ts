/**
 * Holds a streaming caller's connection while the first-chunk gate waits (issue 35): after 3 s
 * without an answer the 200 goes out with SSE comments every 5 s, so the caller does not give
 * up and the gateway can still fail over. An error after that point is written
 * in-band (`committed`).
 */
import type { ServerResponse } from 'node:http'
import type { GatewayError } from '../errors.ts'
import { sseHeaders, type StreamFraming } from '../inference/render.ts'

/** How long a stream's caller waits without a byte before its 200 and keep-alive comments go out. */
export const STREAM_HOLD_MS = 3_000
/** How often a held connection gets a keep-alive comment. */
export const KEEP_ALIVE_EVERY_MS = 5_000

const KEEP_ALIVE = ': keep-alive\n\n'

/** A held connection (`outgoing`, whose `x-request-id` is `requestId`): a class, so a request that never waits costs one object and one timer, no closures. */
export class StreamHold {
  /** True once the 200 went out ahead of the answer. */
  committed = false
  private timer: NodeJS.Timeout | null
  private interval: NodeJS.Timeout | null = null

  constructor(
    private readonly outgoing: ServerResponse,
    private readonly requestId: string,
  ) {
    this.timer = setTimeout(commit, STREAM_HOLD_MS, this)
  }

  /** The wait ran out: the 200 and the first keep-alive go out, then one every KEEP_ALIVE_EVERY_MS. */
  commit(): void {
    this.timer = null
    const outgoing = this.outgoing
    if (outgoing.headersSent || outgoing.destroyed) return
    this.committed = true
    outgoing.writeHead(200, sseHeaders({ 'x-request-id': this.requestId }))
    this.beat()
    this.interval = setInterval(beat, KEEP_ALIVE_EVERY_MS, this)
  }

  beat(): void {
    if (!this.outgoing.destroyed) this.outgoing.write(KEEP_ALIVE)
  }

  /** Stops the timers (the answer is about to be written). */
  release(): void {
    if (this.timer !== null) clearTimeout(this.timer)
    if (this.interval !== null) clearInterval(this.interval)
    this.timer = null
    this.interval = null
  }
}

function commit(hold: StreamHold): void {
  hold.commit()
}

function beat(hold: StreamHold): void {
  hold.beat()
}

/** Ends a held stream with the surface's in-band error event (no event was sent before it). */
export function endHeldStream(outgoing: ServerResponse, framing: StreamFraming, error: GatewayError): void {
  if (outgoing.writableEnded || outgoing.destroyed) return
  outgoing.write(framing.error(error.message, error.code, error.extraFields))
  outgoing.end(framing.end)
}
