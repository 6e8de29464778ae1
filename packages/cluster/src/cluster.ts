/** `createCluster`: wires the libp2p node, the dialer, membership, typed topics and request/response into one `Cluster`. */
import './polyfill.ts'
import { KEEP_ALIVE } from '@libp2p/interface'
import type { PeerId } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { z, type ZodType } from 'zod'
import { ClusterError } from './errors.ts'
import { Emitter } from './events.ts'
import { loadOrCreatePrivateKey } from './identity.ts'
import { heartbeatSchema, Membership } from './membership.ts'
import type { Heartbeat, Member, MembershipEvents } from './membership.ts'
import { createNode } from './node.ts'
import type { Node } from './node.ts'
import { Liveness } from './liveness.ts'
import { Dialer, parsePeer } from './peers.ts'
import { PublishQueue } from './publish-queue.ts'
import { defaultRpcLimits, Rpc, type RequestHandler, type RequestOptions } from './rpc.ts'
import { swarmKeyFromSecret } from './secret.ts'
import { Counters, type ClusterStats } from './stats.ts'
import { Topics, type Topic, type TopicOptions } from './topics.ts'
import type { ClusterInit, ClusterLog, ClusterTiming } from './index.ts'

/** Default timing; `init.timing` overrides any of it. */
const defaultTiming: ClusterTiming = {
  heartbeatMs: 10_000,
  memberTimeoutMs: 30_000,
  suspectMs: 2_500,
  redialMs: 2_000,
  resolveEveryMs: 5_000,
}

/** Default publish queue limits; `init.publish` overrides any of it. */
const defaultPublishLimits = { maxLength: 1_000, ratePerSecond: 200, burst: 50 }

const initSchema = z.object({
  nodeId: z.string().min(1).max(128),
  region: z.string().min(1).max(64).regex(/^[a-z0-9][a-z0-9._-]*$/i, 'letters, digits, . _ -'),
  listen: z.object({ host: z.string().min(1), port: z.number().int().min(0).max(65535) }),
  peers: z.array(z.string().min(1)),
  fleetSecret: z.string().min(1, 'a fleet secret is required: it is what keeps strangers out'),
  dataDir: z.string().min(1),
  timing: z.record(z.string(), z.number().int().positive()).optional(),
  publish: z.record(z.string(), z.number().int().positive()).optional(),
  requests: z.record(z.string(), z.number().int().positive()).optional(),
  joinFirst: z.boolean().optional(),
})

/** Internal request/response protocol of the first words on a new connection. */
const helloProtocol = 'cluster/hello'
/** Most members one hello lists (the rest are learnt from them in turn). */
const maxHelloMembers = 256
/** Between two sweeps for members not heard in time (disconnects have their own timer). */
const sweepEveryMs = 1_000
/** Pings on every open connection (liveness.ts); under a publish burst a 5 s timeout dropped healthy ones. */
const liveness = { everyMs: 10_000, timeoutMs: 10_000 }
/** A node started with `joinFirst` opens its mesh after this long even if nobody called `openMesh()`. */
const joinFirstAtMostMs = 10_000

const helloSchema = z.object({
  self: heartbeatSchema,
  members: z.array(z.object({ peerId: z.string().min(1).max(128), addresses: z.array(z.string().max(512)).max(8) })).max(maxHelloMembers),
})
type Hello = z.infer<typeof helloSchema>

/** Addresses worth announcing: loopback ones only when there is nothing else. */
function announceable(node: Node): string[] {
  const all = node.getMultiaddrs().map((address) => address.toString())
  const reachable = all.filter((address) => !/^\/ip4\/127\.|^\/ip6\/::1\//.test(address))
  return reachable.length > 0 ? reachable : all
}

/** Starts a node, joins the fleet and returns the handle; see `Cluster`. */
export async function createCluster(init: ClusterInit) {
  const checked = initSchema.safeParse(init)
  if (!checked.success) throw new ClusterError('invalid_init', `invalid cluster init: ${checked.error.message}`)
  const log: ClusterLog = init.log ?? (() => {})
  const timing = { ...defaultTiming, ...init.timing }
  const targets = init.peers.map((entry) => parsePeer(entry, init.listen.port))
  const privateKey = await loadOrCreatePrivateKey(init.dataDir)
  const counters = new Counters()
  const node = await createNode({
    privateKey,
    listen: init.listen,
    swarmKey: swarmKeyFromSecret(init.fleetSecret),
    onGossipFrame: (bytes) => {
      counters.gossip.frames++
      counters.gossip.bytes += bytes
    },
  })
  try {
    await node.start()
  } catch (error) {
    await Promise.resolve(node.stop()).catch(() => {})
    throw new ClusterError('listen_failed', `cannot start the p2p listener on ${init.listen.host}:${init.listen.port}: ${listenFailure(error)}`, { cause: error })
  }
  const peerId = node.peerId.toString()
  const pubsub = node.services.pubsub

  let stopping: Promise<void> | undefined
  /** Peers with an open connection, kept from libp2p's events (asked on every sweep and hello). */
  const connectedPeers = new Set<string>(node.getPeers().map((peer) => peer.toString()))
  const events = new Emitter<MembershipEvents>((event, error) => log('warn', 'a cluster event listener threw', { event, error: String(error) }))
  const membership = new Membership(
    { nodeId: init.nodeId, peerId, region: init.region, addresses: announceable(node), since: Date.now() },
    timing,
    { events, isConnected: (id) => connectedPeers.has(id) },
  )
  const queue = new PublishQueue({ send: (topic, data) => pubsub.publish(topic, data).then(() => {}), now: () => performance.now() }, { ...defaultPublishLimits, ...init.publish })
  const topics = new Topics({ pubsub, queue, counters, nodeId: init.nodeId, region: init.region, member: (id) => membership.member(id), log })
  const rpc = new Rpc({ node, counters, log }, { ...defaultRpcLimits, ...init.requests })

  // Membership. A member is learnt from a hello when a connection opens (each side lists the
  // members it knows, which the other dials: a full mesh in one round trip per pair); it is alive
  // while a connection to it is open, and its close starts the suspect countdown.
  const membersTopic = topics.create('_members', heartbeatSchema, { scope: 'fleet', maxBytes: 16 * 1024, coalesceKey: () => 'self' }, true)
  const heartbeat = (leaving = false): Heartbeat => {
    membership.self.addresses = announceable(node)
    return { nodeId: init.nodeId, region: init.region, addresses: membership.self.addresses, startedAt: membership.self.startedAt, ...(leaving ? { leaving } : {}) }
  }
  /** Addresses of the last heartbeat sent, so a change is announced at the next tick. */
  let announced = ''
  /**
   * Every `heartbeatMs`: a heartbeat only when some member has no connection to this node (it
   * hears us through the mesh) or the addresses changed, so an idle full-mesh fleet sends none.
   * A connected peer that never became a member (its hello failed) is greeted again.
   */
  const beat = (): void => {
    const addresses = announceable(node).join(' ')
    let needed = addresses !== announced
    for (const member of membership.members()) if (!member.self && !connectedPeers.has(member.peerId)) needed = true
    for (const id of connectedPeers) if (membership.member(id) === undefined && !greeting.has(id)) void sayHello(id)
    if (!needed) return
    announced = addresses
    membersTopic.publish(heartbeat()).catch((error: unknown) => {
      announced = ''
      log('debug', 'heartbeat not sent', { error: String(error) })
    })
  }
  membersTopic.subscribe((message, _from, meta) => membership.heard(meta.peerId, message, Date.now()))

  /** Members a peer told us of that we have not met yet: dialled, and admitted by their own hello. */
  const candidates = new Map<string, { addresses: string[]; until: number }>()
  const hello = (): Hello => ({
    self: heartbeat(),
    members: membership
      .members()
      .filter((member) => !member.self && member.addresses.length > 0)
      .slice(0, maxHelloMembers)
      .map((member) => ({ peerId: member.peerId, addresses: member.addresses.slice(0, 8) })),
  })
  const heardHello = (from: string, message: Hello): void => {
    membership.heard(from, message.self, Date.now())
    let learnt = false
    for (const member of message.members) {
      if (member.peerId === peerId || membership.member(member.peerId) !== undefined || connectedPeers.has(member.peerId)) continue
      candidates.set(member.peerId, { addresses: member.addresses, until: Date.now() + 60_000 })
      learnt = true
    }
    if (learnt) dialer.poke()
  }
  /** Peers a hello is being said to now. */
  const greeting = new Set<string>()
  const sayHello = async (to: string): Promise<void> => {
    if (greeting.has(to)) return
    greeting.add(to)
    try {
      // A peer that is still starting may not answer the protocol yet: a few tries, then the heartbeat tick tries again.
      for (let attempt = 0; attempt < 4 && stopping === undefined && connectedPeers.has(to); attempt++) {
        try {
          heardHello(to, await rpc.request(to, helloProtocol, hello(), helloSchema, { timeoutMs: 5_000 }))
          return
        } catch (error) {
          log('debug', 'hello not answered', { peer: to, attempt, error: String(error) })
          await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt))
        }
      }
    } finally {
      greeting.delete(to)
    }
  }
  const tagKeepAlive = (peer: PeerId, keep: boolean): void => {
    node.peerStore
      .merge(peer, { tags: { [KEEP_ALIVE]: keep ? { value: 1 } : undefined } })
      .catch((error: unknown) => log('debug', 'could not tag peer', { peer: peer.toString(), error: String(error) }))
  }
  // Only fleet members get past pnet, so every connected peer is worth keeping.
  node.addEventListener('peer:connect', (event) => {
    const id = event.detail.toString()
    connectedPeers.add(id)
    candidates.delete(id)
    tagKeepAlive(event.detail, true)
    membership.connected(id)
  })
  // The side that dialled says hello: one round trip per new connection.
  node.addEventListener('connection:open', (event) => {
    if (event.detail.direction === 'outbound') void sayHello(event.detail.remotePeer.toString())
  })
  const suspectTimers = new Set<NodeJS.Timeout>()
  node.addEventListener('peer:disconnect', (event) => {
    const id = event.detail.toString()
    connectedPeers.delete(id)
    membership.disconnected(id, Date.now())
    dialer.poke()
    // Sweep right when the suspicion ends, not at the next periodic sweep.
    const timer = setTimeout(() => {
      suspectTimers.delete(timer)
      membership.sweep(Date.now())
    }, timing.suspectMs + 10)
    suspectTimers.add(timer)
  })
  events.on('member:join', (member) => log('info', `${member.nodeId} (${member.region}) joined the fleet`, { peerId: member.peerId }))
  events.on('member:leave', (member, reason) => {
    log('info', `${member.nodeId} (${member.region}) left the fleet: ${reason}`, { peerId: member.peerId })
    // Stop libp2p's own redials of a node gone for good; our dialer still finds it if it returns.
    if (reason !== 'restarted' && !connectedPeers.has(member.peerId)) tagKeepAlive(peerIdFromString(member.peerId), false)
  })
  events.on('leader:change', (change) => log('info', `leader of ${change.region} is now ${change.leader?.nodeId ?? 'nobody'}`))

  const dialer = new Dialer(
    {
      node,
      members: () => {
        const now = Date.now()
        const known: Array<{ peerId: string; addresses: readonly string[] }> = [...membership.others()]
        for (const [id, candidate] of candidates) {
          if (now > candidate.until || membership.member(id) !== undefined) candidates.delete(id)
          else known.push({ peerId: id, addresses: candidate.addresses })
        }
        return known
      },
      connected: () => connectedPeers,
      log,
    },
    targets,
    { intervalMs: timing.redialMs, resolveEveryMs: timing.resolveEveryMs, dialTimeoutMs: 5_000, held: init.joinFirst === true },
  )
  const openMesh = (): void => {
    clearTimeout(meshTimer)
    if (dialer.openMesh()) log('debug', 'opening the mesh: dialling every member')
  }
  const meshTimer = setTimeout(openMesh, joinFirstAtMostMs)
  meshTimer.unref()
  // Registered once everything it uses exists; a peer that asks earlier is refused and tries again.
  await rpc.handle(helloProtocol, helloSchema, helloSchema, (message, from) => {
    heardHello(from, message)
    return hello()
  })
  dialer.start()
  const pinger = new Liveness(node, liveness, (message, fields) => log('warn', message, fields))
  pinger.start()
  const heartbeatTimer = setInterval(beat, timing.heartbeatMs)
  const sweepTimer = setInterval(() => membership.sweep(Date.now()), sweepEveryMs)
  beat()
  log('info', `cluster node ${init.nodeId} (${init.region}) listening`, { peerId, addresses: membership.self.addresses })

  const stop = async (): Promise<void> => {
    clearInterval(heartbeatTimer)
    clearInterval(sweepTimer)
    clearTimeout(meshTimer)
    pinger.stop()
    for (const timer of suspectTimers) clearTimeout(timer)
    dialer.stop()
    queue.close()
    try {
      // Straight to gossipsub, past the closed queue: peers drop us at once instead of after suspectMs.
      await pubsub.publish(membersTopic.name, new TextEncoder().encode(JSON.stringify({ node: init.nodeId, at: Date.now(), body: heartbeat(true) })))
    } catch (error) {
      log('debug', 'leave message not sent', { error: String(error) })
    }
    await node.stop()
  }

  /** A stopped (or stopping) cluster refuses new topics, handlers and requests. */
  const running = (): void => {
    if (stopping !== undefined) throw new ClusterError('stopped', 'the cluster is stopped')
  }
  return {
    peerId,
    nodeId: init.nodeId,
    region: init.region,
    /** Multiaddrs (with `/p2p/<peerId>`) this node announces. */
    get addresses(): string[] {
      return [...membership.self.addresses]
    },
    /** Live members, self included, sorted by node id. */
    members: (): Member[] => membership.members(),
    /** The live member with this peer id. */
    member: (id: string): Member | undefined => membership.member(id),
    /** Leader of `region` (default: this node's), from the live view; `leader()?.self` says whether it is this node. */
    leader: (region?: string): Member | undefined => membership.leader(region ?? init.region),
    /** Adds a listener of `member:join`, `member:leave` or `leader:change`; returns the function that removes it. */
    on: <Name extends keyof MembershipEvents>(event: Name, listener: (...args: MembershipEvents[Name]) => void): (() => void) => events.on(event, listener),
    /** A typed gossip topic, created once per node (a node only gets messages of topics it created); publishing is queued. */
    topic<T>(name: string, schema: ZodType<T>, options: TopicOptions<T>): Topic<T> {
      running()
      return topics.create(name, schema, options)
    },
    /** Answers `protocol` requests: the request is checked against `requestSchema`, the answer against `responseSchema`. */
    async handle<Q, R>(protocol: string, requestSchema: ZodType<Q>, responseSchema: ZodType<R>, handler: RequestHandler<Q, R>): Promise<void> {
      running()
      await rpc.handle(protocol, requestSchema, responseSchema, handler)
    },
    /** Sends one request to a peer; rejects with a `ClusterError` (`peer_unreachable`, `request_timeout`, `remote_error`, ...). */
    async request<Q, R>(peerId: string, protocol: string, request: Q, responseSchema: ZodType<R>, options?: RequestOptions): Promise<R> {
      running()
      return rpc.request(peerId, protocol, request, responseSchema, options)
    },
    /** Resolves once every configured peer was dialled once, with how many peers are connected then (0: none answered). */
    async dialed(): Promise<number> {
      await dialer.dialedOnce
      return node.getPeers().length
    },
    /** Ends the `joinFirst` hold: dials every member learnt so far and from now on. Idempotent. */
    openMesh,
    /** Counters and gauges for `/metrics`. */
    stats: (): ClusterStats => counters.snapshot({ queued: queue.length, connections: node.getConnections().length, members: membership.members().length }),
    /** Tells peers this node leaves, then closes every connection. Idempotent. */
    stop: (): Promise<void> => {
      stopping ??= stop()
      return stopping
    },
  }
}

/** Why the p2p listener did not start, in one line (libp2p's error embeds each address's error with its stack). */
function listenFailure(error: unknown): string {
  const text = String(error)
  const cause = /(E[A-Z]+): ([^\n]+)/.exec(text)
  return cause !== null ? `${cause[1]}: ${cause[2]!.trim()}` : text.split('\n')[0]!
}
