/**
 * Liveness of open connections (issue 19): a hung peer keeps its TCP connection open, so only an
 * unanswered ping shows it; its connection is aborted and the member becomes suspect. The side that
 * dialled sends the muxer's own ping (one yamux frame each way, not libp2p's ping stream) every
 * `everyMs`, and aborts when one goes unanswered for `timeoutMs`; the other side watches the pings
 * arrive and aborts when none came for `everyMs + timeoutMs` (both sides pinging was an idle node's
 * largest fixed cost at 50 nodes). Where ping frames cannot be watched, both sides ping.
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

/** What the loop needs of the libp2p node. */
export interface LivenessNode {
  getConnections(): Connection[]
  services: { ping: Pick<Node['services']['ping'], 'ping'> }
}

/** The parts of yamux's muxer used here. libp2p 3 keeps the muxer on the connection without typing it. */
interface PingingMuxer {
  ping(options: { signal: AbortSignal }): Promise<number>
  /** Called by the muxer for every ping frame it reads (a request or an answer). */
  handlePing(header: unknown): void
}

/** The muxer of `connection`, with whichever of the two methods it has. */
function muxerOf(connection: Connection): Partial<PingingMuxer> | undefined {
  // `muxer` is a public field of libp2p's Connection class that its interface type does not list.
  return (connection as unknown as { muxer?: Partial<PingingMuxer> }).muxer
}

/** Pings the connections this node dialled; watches the others for their peers' pings. */
export class Liveness {
  private readonly pending = new Set<string>()
  /** Connection id -> when this node last sent a ping on it. */
  private readonly sent = new Map<string, number>()
  /** Connection id -> when the peer last pinged on it (or when this node first saw it). */
  private readonly heard = new Map<string, number>()
  /** Muxers whose ping frames are watched already. */
  private readonly watched = new WeakSet<object>()
  private timer: NodeJS.Timeout | undefined
  private stopped = false

  constructor(
    private readonly node: LivenessNode,
    private readonly options: LivenessOptions,
    private readonly log: (message: string, fields: Record<string, unknown>) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How often the loop looks: four times per ping interval, so a silent peer is noticed at most a quarter interval late. */
  get tickMs(): number {
    return Math.max(1, Math.floor(this.options.everyMs / 4))
  }

  start(): void {
    this.timer = setInterval(() => this.round(), this.tickMs)
  }

  stop(): void {
    this.stopped = true
    clearInterval(this.timer)
  }

  /** One look at every open connection: ping those due, abort those whose peer went silent. */
  round(): void {
    const now = this.now()
    const open = new Set<string>()
    for (const connection of this.node.getConnections()) {
      if (connection.status !== 'open') continue
      open.add(connection.id)
      const watching = connection.direction === 'inbound' && this.watch(connection)
      if (watching) {
        const heard = this.heard.get(connection.id)
        if (heard === undefined) this.heard.set(connection.id, now)
        else if (now - heard >= this.options.everyMs + this.options.timeoutMs) this.silent(connection, now - heard)
        continue
      }
      // Every fourth tick: half a tick early rather than a whole tick late.
      const last = this.sent.get(connection.id)
      if (last !== undefined && now - last < this.options.everyMs - this.tickMs / 2) continue
      if (this.pending.has(connection.id)) continue
      this.sent.set(connection.id, now)
      this.pending.add(connection.id)
      void this.ping(connection).finally(() => this.pending.delete(connection.id))
    }
    for (const id of this.sent.keys()) if (!open.has(id)) this.sent.delete(id)
    for (const id of this.heard.keys()) if (!open.has(id)) this.heard.delete(id)
  }

  /** Records the peer's ping frames on `connection`; false when its muxer does not let us. */
  private watch(connection: Connection): boolean {
    const muxer = muxerOf(connection)
    if (muxer === undefined || typeof muxer.handlePing !== 'function' || typeof muxer.ping !== 'function') return false
    if (this.watched.has(muxer)) return true
    const handle = muxer.handlePing
    const id = connection.id
    muxer.handlePing = (header: unknown) => {
      this.heard.set(id, this.now())
      handle.call(muxer, header)
    }
    this.watched.add(muxer)
    return true
  }

  private silent(connection: Connection, forMs: number): void {
    this.log('a connection\'s peer stopped pinging: closing it', { peer: connection.remotePeer.toString(), silentMs: Math.round(forMs) })
    connection.abort(new Error(`no ping from the peer for ${Math.round(forMs)} ms`))
  }

  private async ping(connection: Connection): Promise<void> {
    const signal = AbortSignal.timeout(this.options.timeoutMs)
    try {
      const muxer = muxerOf(connection)
      if (muxer !== undefined && typeof muxer.ping === 'function') await muxer.ping.call(muxer, { signal })
      else await this.node.services.ping.ping(connection.remotePeer, { signal })
    } catch (error) {
      if (connection.status !== 'open' || this.stopped) return
      this.log('a connection did not answer its ping: closing it', { peer: connection.remotePeer.toString(), error: String(error) })
      connection.abort(error instanceof Error ? error : new Error(String(error)))
    }
  }
}
