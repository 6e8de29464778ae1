/**
 * `createCluster`: wires the libp2p node, the dialer, membership heartbeats,
 * typed topics and request/response into one `Cluster`.
 */
import './polyfill.ts'
import { KEEP_ALIVE } from '@libp2p/interface'
import type { PeerId } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { z } from 'zod'
import { ClusterError } from './errors.ts'
import { Emitter } from './events.ts'
import { loadOrCreatePrivateKey } from './identity.ts'
import { heartbeatSchema, Membership } from './membership.ts'
import type { Heartbeat, MembershipEvents } from './membership.ts'
import { createNode } from './node.ts'
import type { Node } from './node.ts'
import { Dialer, parsePeer } from './peers.ts'
import { PublishQueue } from './publish-queue.ts'
import { defaultRpcLimits, Rpc } from './rpc.ts'
import { swarmKeyFromSecret } from './secret.ts'
import { Counters } from './stats.ts'
import { maxGossipFrameBytes, Topics } from './topics.ts'
import type { Cluster, ClusterInit, ClusterLog, ClusterTiming } from './index.ts'

/** Default timing; `init.timing` overrides any of it. */
export const defaultTiming: ClusterTiming = {
  heartbeatMs: 1_000,
  memberTimeoutMs: 5_000,
  suspectMs: 2_500,
  redialMs: 2_000,
  resolveEveryMs: 5_000,
}

/** Default publish queue limits; `init.publish` overrides any of it. */
export const defaultPublishLimits = { maxLength: 1_000, ratePerSecond: 200, burst: 50 }

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
})

const noLog: ClusterLog = () => {}

/** Addresses worth announcing: loopback ones only when there is nothing else. */
function announceable(node: Node): string[] {
  const all = node.getMultiaddrs().map((address) => address.toString())
  const reachable = all.filter((address) => !/^\/ip4\/127\.|^\/ip6\/::1\//.test(address))
  return reachable.length > 0 ? reachable : all
}

/** Starts a node, joins the fleet and returns the handle; see `Cluster`. */
export async function createCluster(init: ClusterInit): Promise<Cluster> {
  const checked = initSchema.safeParse(init)
  if (!checked.success) throw new ClusterError('invalid_init', `invalid cluster init: ${checked.error.message}`)
  const log = init.log ?? noLog
  const timing = { ...defaultTiming, ...init.timing }
  const targets = init.peers.map((entry) => parsePeer(entry, init.listen.port))
  const privateKey = await loadOrCreatePrivateKey(init.dataDir)
  const counters = new Counters()
  const node = await createNode({
    privateKey,
    listen: init.listen,
    swarmKey: swarmKeyFromSecret(init.fleetSecret),
    maxGossipFrameBytes,
    onGossipFrame: (bytes) => {
      counters.gossip.frames++
      counters.gossip.bytes += bytes
    },
  })
  try {
    await node.start()
  } catch (error) {
    await Promise.resolve(node.stop()).catch(() => {})
    throw new ClusterError('listen_failed', `cannot start the p2p listener on ${init.listen.host}:${init.listen.port}: ${String(error)}`, { cause: error })
  }
  const peerId = node.peerId.toString()
  const pubsub = node.services.pubsub

  const events = new Emitter<MembershipEvents>((event, error) => log('warn', 'a cluster event listener threw', { event, error: String(error) }))
  const membership = new Membership(
    { nodeId: init.nodeId, peerId, region: init.region, addresses: announceable(node), since: Date.now() },
    { timeoutMs: timing.memberTimeoutMs, suspectMs: timing.suspectMs },
    { events, isConnected: (id) => node.getPeers().some((peer) => peer.toString() === id) },
  )
  const queue = new PublishQueue(
    {
      send: async (topic, data) => {
        await pubsub.publish(topic, data)
      },
      now: () => performance.now(),
    },
    { ...defaultPublishLimits, ...init.publish },
  )
  const topics = new Topics({
    pubsub,
    queue,
    counters,
    nodeId: init.nodeId,
    region: init.region,
    member: (id) => membership.member(id),
    log,
  })
  const rpc = new Rpc({ node, counters, log }, { ...defaultRpcLimits, ...init.requests })

  // Membership: heartbeats on an internal fleet topic.
  const membersTopic = topics.create('_members', heartbeatSchema, { scope: 'fleet', maxBytes: 16 * 1024, coalesceKey: () => 'self' }, true)
  const heartbeat = (leaving = false): Heartbeat => {
    membership.setSelfAddresses(announceable(node))
    return { nodeId: init.nodeId, region: init.region, addresses: membership.self.addresses, startedAt: membership.self.startedAt, ...(leaving ? { leaving } : {}) }
  }
  const beat = (): void => {
    membersTopic.publish(heartbeat()).catch((error: unknown) => log('debug', 'heartbeat not sent', { error: String(error) }))
  }
  membersTopic.subscribe((message, _from, meta) => membership.heard(meta.peerId, message, Date.now()))
  // A peer that just subscribed hears from us now, not a heartbeat later: joins settle faster.
  // Its subscription can arrive before our own outbound gossip stream to it is
  // open, and gossipsub silently skips a peer without one, so say it again shortly.
  const followUps = new Set<NodeJS.Timeout>()
  pubsub.addEventListener('subscription-change', (event) => {
    if (!event.detail.subscriptions.some((entry) => entry.subscribe && entry.topic === membersTopic.name)) return
    beat()
    for (const delayMs of [100, 300]) {
      const timer = setTimeout(() => {
        followUps.delete(timer)
        beat()
      }, delayMs)
      followUps.add(timer)
    }
  })

  const tagKeepAlive = (peer: PeerId, keep: boolean): void => {
    node.peerStore
      .merge(peer, { tags: { [KEEP_ALIVE]: keep ? { value: 1 } : undefined } })
      .catch((error: unknown) => log('debug', 'could not tag peer', { peer: peer.toString(), error: String(error) }))
  }
  // Only fleet members get past pnet, so every connected peer is worth keeping.
  node.addEventListener('peer:connect', (event) => {
    tagKeepAlive(event.detail, true)
    membership.connected(event.detail.toString())
  })
  node.addEventListener('peer:disconnect', (event) => membership.disconnected(event.detail.toString(), Date.now()))
  events.on('member:join', (member) => log('info', `${member.nodeId} (${member.region}) joined the fleet`, { peerId: member.peerId }))
  events.on('member:leave', (member, reason) => {
    log('info', `${member.nodeId} (${member.region}) left the fleet: ${reason}`, { peerId: member.peerId })
    // Stop libp2p's own redials of a node gone for good; our dialer still finds it if it returns.
    if (!node.getPeers().some((peer) => peer.toString() === member.peerId)) tagKeepAlive(peerIdFromString(member.peerId), false)
  })
  events.on('leader:change', (change) => log('info', `leader of ${change.region} is now ${change.leader?.nodeId ?? 'nobody'}`))

  const dialer = new Dialer(
    { node, members: () => membership.members().filter((member) => !member.self), log },
    targets,
    { intervalMs: timing.redialMs, resolveEveryMs: timing.resolveEveryMs, dialTimeoutMs: 5_000 },
  )
  dialer.start()
  const heartbeatTimer = setInterval(beat, timing.heartbeatMs)
  const sweepTimer = setInterval(() => membership.sweep(Date.now()), Math.max(100, Math.floor(timing.heartbeatMs / 2)))
  beat()
  log('info', `cluster node ${init.nodeId} (${init.region}) listening`, { peerId, addresses: membership.self.addresses })

  let stopping: Promise<void> | undefined
  const stop = async (): Promise<void> => {
    clearInterval(heartbeatTimer)
    clearInterval(sweepTimer)
    for (const timer of followUps) clearTimeout(timer)
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

  const cluster: Cluster = {
    peerId,
    nodeId: init.nodeId,
    region: init.region,
    get addresses() {
      return [...membership.self.addresses]
    },
    members: () => membership.members(),
    member: (id) => membership.member(id),
    leader: (region) => membership.leader(region ?? init.region),
    on: (event, listener) => events.on(event, listener),
    topic: (name, schema, options) => {
      if (stopping !== undefined) throw new ClusterError('stopped', 'the cluster is stopped')
      return topics.create(name, schema, options)
    },
    handle: async (protocol, requestSchema, responseSchema, handler) => {
      if (stopping !== undefined) throw new ClusterError('stopped', 'the cluster is stopped')
      await rpc.handle(protocol, requestSchema, responseSchema, handler)
    },
    request: async (target, protocol, request, responseSchema, options) => {
      if (stopping !== undefined) throw new ClusterError('stopped', 'the cluster is stopped')
      return rpc.request(target, protocol, request, responseSchema, options)
    },
    dialed: async () => {
      await dialer.dialedOnce
      return node.getPeers().length
    },
    stats: () => counters.snapshot({ queued: queue.length, connections: node.getConnections().length, members: membership.members().length }),
    stop: () => {
      stopping ??= stop()
      return stopping
    },
  }
  return cluster
}
