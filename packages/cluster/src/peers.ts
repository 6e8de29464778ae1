/**
 * Finding the rest of the fleet: `--peers` entries (`host:port`, multiaddrs, or DNS names that
 * resolve to several addresses, like a Kubernetes headless Service) plus the addresses live
 * members announce. libp2p 3 has no autodialer and @libp2p/bootstrap dials each entry once, so
 * this loop dials every known peer that is not connected, every few seconds, forever.
 */
import { lookup, resolve4 } from 'node:dns/promises'
import { isIP } from 'node:net'
import { multiaddr } from '@multiformats/multiaddr'
import type { Multiaddr } from '@multiformats/multiaddr'
import { peerIdFromString } from '@libp2p/peer-id'
import { ClusterError } from './errors.ts'
import type { Node } from './node.ts'

/** First wait after a failed dial, and how often the dialer looks for due targets. */
const retryBaseMs = 250

/** One `--peers` entry, parsed. */
export type PeerTarget =
  | { kind: 'multiaddr'; address: string }
  | { kind: 'host'; host: string; port: number }

/**
 * Parses a `--peers` entry: a multiaddr (`/ip4/10.0.0.2/tcp/4001`, `/dns4/peers.svc/tcp/4001`),
 * `host:port`, `[v6]:port`, or a bare host on `defaultPort` (the node's own, as in a StatefulSet).
 */
export function parsePeer(entry: string, defaultPort: number): PeerTarget {
  const text = entry.trim()
  if (text.startsWith('/')) {
    let address: Multiaddr
    try {
      address = multiaddr(text)
    } catch (error) {
      throw new ClusterError('invalid_init', `peer "${entry}" is not a valid multiaddr`, { cause: error })
    }
    // /dns4 names are resolved by us, to every address, not by the TCP transport to one.
    const match = /^\/dns4?\/([^/]+)\/tcp\/(\d+)$/.exec(address.toString())
    if (match?.[1] !== undefined) return { kind: 'host', host: match[1], port: Number(match[2]) }
    return { kind: 'multiaddr', address: address.toString() }
  }
  const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(text) ?? /^([^:]+)(?::(\d+))?$/.exec(text)
  if (match?.[1] === undefined) throw new ClusterError('invalid_init', `peer "${entry}" is not host:port, a multiaddr or a DNS name`)
  const port = match[2] === undefined ? defaultPort : Number(match[2])
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new ClusterError('invalid_init', `peer "${entry}" needs a port (the node's own p2p port is 0, so it cannot be the default)`)
  }
  return { kind: 'host', host: match[1], port }
}

/** Every IPv4 address of a name: asked of DNS (fresh records), else of the system resolver (`localhost` from /etc/hosts). */
export async function resolveHost(host: string): Promise<string[]> {
  if (isIP(host) !== 0) return [host]
  try {
    const addresses = await resolve4(host)
    if (addresses.length > 0) return addresses
  } catch {
    // fall through to the system resolver
  }
  const found = await lookup(host, { all: true, family: 4 })
  return found.map((entry) => entry.address)
}

/** What the dialer needs from the cluster. */
export interface DialerComponents {
  node: Node
  /** Members other than self, with the addresses they announced. */
  members(): Iterable<{ peerId: string; addresses: readonly string[] }>
  /** Peer ids with an open connection now; default: asked of libp2p, which costs an idle node a tenth of its work at 49 connections (issue 19). */
  connected?(): ReadonlySet<string>
  log(level: 'debug' | 'warn', message: string, fields?: Record<string, unknown>): void
}

/** Timing of the dialer. */
export interface DialerOptions {
  /** Longest wait between two dials of a target that is not connected. */
  intervalMs: number
  /** Between two resolutions of the DNS names in `peers`. */
  resolveEveryMs: number
  /** One dial attempt at most. */
  dialTimeoutMs: number
  /** Start held: only the configured peers are dialled, and none once one is connected, until `openMesh()`. */
  held?: boolean
}

/** Keeps a connection to every peer it knows of. */
export class Dialer {
  /** Address (without peer id) -> peer id found there, so connected peers are not redialled. */
  private readonly peerAt = new Map<string, string>()
  /** Addresses that turned out to be this node (a Service lists its own pod too). */
  private readonly selfAddresses = new Set<string>()
  private readonly inFlight = new Set<string>()
  /** Failed targets wait 250 ms doubling up to `intervalMs`: a fleet starts together, and a fixed 2 s wait made joins slow. */
  private readonly backoff = new Map<string, { failures: number; nextAt: number }>()
  private resolved: string[] = []
  private resolvedAt = Number.NEGATIVE_INFINITY
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private running = false
  private poked = false
  private held: boolean
  private firstRoundDone: () => void = () => {}
  /** Settles once every configured peer was dialled once (connected or failed), or the dialer stopped. */
  readonly dialedOnce: Promise<void> = new Promise((resolve) => (this.firstRoundDone = resolve))

  constructor(
    private readonly components: DialerComponents,
    private readonly targets: PeerTarget[],
    private readonly options: DialerOptions,
  ) {
    this.held = options.held === true
  }

  /**
   * Lets a held dialer dial every member it knows of. A joining node holds it while it pulls its
   * state from the first peer: connecting to a 50-node fleet at once kept both cores busy for
   * seconds, and the pull waited behind it (issue 19). False when it was not held (any more).
   */
  openMesh(): boolean {
    if (!this.held) return false
    this.held = false
    this.poke()
    return true
  }

  /** Starts dialing now: every 250 ms while some target is not connected, else every `intervalMs` or when `poke()`d. */
  start(): void {
    this.schedule(0)
  }

  /** Something changed: run a round soon instead of at the next idle look. */
  poke(): void {
    if (this.stopped || this.running) {
      this.poked = true
      return
    }
    this.schedule(0)
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.running = true
      this.poked = false
      void this.round()
        .catch((error: unknown) => {
          this.components.log('warn', 'dial round failed', { error: String(error) })
          return 1
        })
        .then((pending) => {
          this.running = false
          this.firstRoundDone()
          this.schedule(this.poked ? 0 : pending > 0 ? this.untilNextDue() : this.options.intervalMs)
        })
    }, delayMs)
  }

  /** How long until the first target waiting out its backoff is due (at least 250 ms). */
  private untilNextDue(): number {
    let next = Number.POSITIVE_INFINITY
    for (const waiting of this.backoff.values()) next = Math.min(next, waiting.nextAt)
    return Math.min(this.options.intervalMs, Math.max(retryBaseMs, next - Date.now()))
  }

  /** Stops the loop; dials in flight end with the node. */
  stop(): void {
    this.stopped = true
    this.firstRoundDone()
    if (this.timer !== undefined) clearTimeout(this.timer)
  }

  /** One round: resolve names when due, then dial everything not connected; returns how many were not. */
  async round(): Promise<number> {
    const { node } = this.components
    const connected = this.components.connected?.() ?? new Set(node.getPeers().map((peer) => peer.toString()))
    // This node's own addresses are built (multiaddr parsing) only when a target is not known
    // to be a connected peer: an idle round with every peer connected does next to nothing.
    let own: Set<string> | undefined
    const isOwn = (address: string): boolean => {
      own ??= new Set(node.getMultiaddrs().map((entry) => entry.decapsulateCode(421).toString()))
      return own.has(address)
    }
    const dials: Array<Promise<void>> = []
    // Held (a node that joins): the configured peers only, and only until one of them answers.
    if (this.held && connected.size > 0) return 0
    for (const address of await this.staticAddresses()) {
      const known = this.peerAt.get(address)
      if (this.selfAddresses.has(address) || (known !== undefined && connected.has(known))) continue
      if (isOwn(address)) this.selfAddresses.add(address)
      else dials.push(this.dial(address, [multiaddr(address)]))
    }
    for (const member of this.held ? [] : this.components.members()) {
      if (connected.has(member.peerId) || member.addresses.length === 0) continue
      // A member that is not connected: parsed here only, so an idle round parses nothing.
      try {
        // Announced addresses end in /p2p/<peer id>, so libp2p checks it is that member.
        peerIdFromString(member.peerId)
        dials.push(this.dial(member.peerId, member.addresses.map((address) => multiaddr(address)), true))
      } catch (error) {
        this.components.log('debug', 'member announced an address that cannot be dialled', { peerId: member.peerId, error: String(error) })
      }
    }
    await Promise.allSettled(dials)
    return dials.length
  }

  private async staticAddresses(): Promise<string[]> {
    // Names that resolved to nothing yet (pods still starting) are asked again sooner.
    const every = this.resolved.length === 0 && this.targets.length > 0 ? Math.min(1_000, this.options.resolveEveryMs) : this.options.resolveEveryMs
    if (Date.now() - this.resolvedAt < every) return this.resolved
    const addresses: string[] = []
    for (const target of this.targets) {
      if (target.kind === 'multiaddr') {
        addresses.push(target.address)
        continue
      }
      try {
        for (const ip of await resolveHost(target.host)) addresses.push(`/${isIP(ip) === 6 ? 'ip6' : 'ip4'}/${ip}/tcp/${target.port}`)
      } catch (error) {
        // A name that does not resolve yet (pods still starting) is normal: keep trying.
        this.components.log('debug', 'peer name did not resolve', { host: target.host, error: String(error) })
      }
    }
    this.resolved = [...new Set(addresses)]
    this.resolvedAt = Date.now()
    return this.resolved
  }

  private async dial(key: string, addresses: Multiaddr[], isMember = false): Promise<void> {
    if (this.stopped || this.inFlight.has(key)) return
    const waiting = this.backoff.get(key)
    if (waiting !== undefined && Date.now() < waiting.nextAt) return
    this.inFlight.add(key)
    try {
      const signal = AbortSignal.timeout(this.options.dialTimeoutMs)
      const connection = await this.components.node.dial(addresses, { signal })
      if (!isMember) this.peerAt.set(key, connection.remotePeer.toString())
      this.backoff.delete(key)
    } catch (error) {
      const name = (error as Error).name
      if (name === 'InvalidPeerIdError' && /self/i.test((error as Error).message)) this.selfAddresses.add(key)
      else this.components.log('debug', 'dial failed', { target: key, error: String(error) })
      const failures = (waiting?.failures ?? 0) + 1
      this.backoff.set(key, { failures, nextAt: Date.now() + Math.min(this.options.intervalMs, retryBaseMs * 2 ** (failures - 1)) })
    } finally {
      this.inFlight.delete(key)
    }
  }
}
