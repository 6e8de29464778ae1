/**
 * Liveness of open connections (issue 19). A peer whose process hangs, or that a partition cuts
 * off, keeps its TCP connection open: only an unanswered ping shows it, and the connection is
 * then aborted (the member becomes suspect, and is dropped unless it is heard again).
 *
 * libp2p's connection monitor does this with the ping protocol, which opens a new stream for
 * every ping: multistream-select both ways, a peer-store write on each side, then a close. Every
 * 10 s on every connection, at 50 nodes, that was the largest fixed cost of an idle node. The
 * muxer (yamux) has its own ping, one 12-byte frame each way on the open connection: that is
 * what this loop sends, at the same interval and with the same timeout as before, so a hung or
 * cut-off peer is noticed as fast. A muxer without a ping falls back to the ping protocol.
 */
import type { Connection } from '@libp2p/interface'
import type { Node } from './node.ts'

/** Timing of the liveness loop. */
export interface LivenessOptions {
  /** Between two pings of one connection. */
  everyMs: number
  /** A ping not answered within this long aborts its connection. */
  timeoutMs: number
}

/** The part of yamux's muxer used here. libp2p 3 keeps the muxer on the connection without typing it. */
interface PingingMuxer {
  ping(options: { signal: AbortSignal }): Promise<number>
}

/** The muxer's frame ping of `connection`, when it has one. */
function framePing(connection: Connection): PingingMuxer['ping'] | undefined {
  // `muxer` is a public field of libp2p's Connection class that its interface type does not list.
  const muxer = (connection as unknown as { muxer?: Partial<PingingMuxer> }).muxer
  const ping = muxer?.ping
  return typeof ping === 'function' ? (options) => ping.call(muxer, options) : undefined
}

/** Pings every open connection every `everyMs`; aborts those that do not answer in time. */
export class Liveness {
  private readonly node: Node
  private readonly options: LivenessOptions
  private readonly log: (message: string, fields: Record<string, unknown>) => void
  private readonly pending = new Set<string>()
  private timer: NodeJS.Timeout | undefined

  constructor(node: Node, options: LivenessOptions, log: (message: string, fields: Record<string, unknown>) => void) {
    this.node = node
    this.options = options
    this.log = log
  }

  start(): void {
    this.timer = setInterval(() => this.round(), this.options.everyMs)
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
  }

  /** One ping on every open connection that has none in flight. */
  round(): void {
    for (const connection of this.node.getConnections()) {
      if (connection.status !== 'open' || this.pending.has(connection.id)) continue
      this.pending.add(connection.id)
      void this.ping(connection).finally(() => this.pending.delete(connection.id))
    }
  }

  private async ping(connection: Connection): Promise<void> {
    const signal = AbortSignal.timeout(this.options.timeoutMs)
    try {
      const viaFrame = framePing(connection)
      if (viaFrame !== undefined) await viaFrame({ signal })
      else await this.node.services.ping.ping(connection.remotePeer, { signal })
    } catch (error) {
      if (connection.status !== 'open' || this.timer === undefined) return
      this.log('a connection did not answer its ping: closing it', { peer: connection.remotePeer.toString(), error: String(error) })
      connection.abort(error instanceof Error ? error : new Error(String(error)))
    }
  }
}
