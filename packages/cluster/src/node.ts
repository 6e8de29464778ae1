/**
 * The one libp2p node a gateway runs: tcp, pnet, noise, yamux, identify, ping and gossipsub, tuned
 * for a small fleet. Internal: `createCluster` and the test fixtures use it.
 */
import './polyfill.ts'
import { createLibp2p } from 'libp2p'
import type { Libp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@libp2p/yamux'
import { identify } from '@libp2p/identify'
import type { Identify } from '@libp2p/identify'
import { ping } from '@libp2p/ping'
import type { Ping } from '@libp2p/ping'
import { gossipsub, StrictSign } from '@libp2p/gossipsub'
import type { GossipSub } from '@libp2p/gossipsub'
import { preSharedKey } from '@libp2p/pnet'
import type { PrivateKey } from '@libp2p/interface'
import { maxGossipFrameBytes } from './topics.ts'

/** Services of the node. */
// A type alias, not an interface: libp2p's ServiceMap needs an index signature.
export type NodeServices = {
  identify: Identify
  ping: Ping
  pubsub: GossipSub
}

/** The libp2p node type `createNode` returns. */
export type Node = Libp2p<NodeServices>

/** What `createNode` needs. */
export interface NodeInit {
  privateKey: PrivateKey
  listen: { host: string; port: number }
  /** pnet swarm key; omitted only by tests that play a stranger. */
  swarmKey: Uint8Array | undefined
  /** Sees every gossip message that arrives, duplicates included, with its payload size. */
  onGossipFrame?: (bytes: number) => void
}

/**
 * Gossipsub settings for a small fleet, measured on 2-core machines (shared/notes/libp2p.md):
 * flood publishing reaches every subscriber in one hop, a smaller mesh costs less CPU, and signed
 * messages authenticate the sender (their wall-clock seeded seqno survives a restart).
 */
export const gossipSettings = {
  // The publisher floods every subscriber directly, so the mesh only relays to a peer cut off from
  // it: with D 4-8 every node got 5 copies of every message at 10 nodes (issue 19).
  D: 2,
  Dlo: 1,
  Dhi: 3,
  Dout: 0,
  // Gossip (IHAVE) to peers outside the mesh: flood publishing already reached them.
  Dlazy: 1,
  floodPublish: true,
  // Mesh upkeep every 3 s, not 1 s: the mesh only relays, and this was an idle node's largest fixed cost (issue 19).
  heartbeatInterval: 3_000,
  fallbackToFloodsub: false,
  allowPublishToZeroTopicPeers: true,
  globalSignaturePolicy: StrictSign,
  // Our topic validators reject bad messages; without topic score params a
  // rejection does not push a fleet member under the graylist threshold.
  emitSelf: false,
  // No penalty for peers sharing an IP: at 30 nodes on one host every peer fell below the graylist.
  // Sybil protection is pnet's job: only holders of the fleet secret connect at all.
  scoreParams: { IPColocationFactorWeight: 0 },
} as const

/** Connection settings; see the notes for why each differs from the default. */
export const connectionSettings = {
  // A restarting fleet on one host dials in bursts: the default of 5 per
  // second per IP refused legitimate peers.
  inboundConnectionThreshold: 100,
  maxIncomingPendingConnections: 50,
  dialTimeout: 5_000,
  // KEEP_ALIVE peers are redialled by libp2p for ~30 s; our own loop covers the rest.
  reconnectRetries: 5,
  reconnectRetryInterval: 500,
} as const

/**
 * The id gossipsub drops a seen copy by: sender and seqno as in StrictSign, but read straight from
 * the frame, before the signature is checked again. Every arriving copy passes here: it counts them.
 */
function fastMessageId(onFrame: ((bytes: number) => void) | undefined) {
  return (message: { from?: Uint8Array; seqno?: Uint8Array; data?: Uint8Array }): string => {
    onFrame?.(message.data?.byteLength ?? 0)
    const from = message.from ?? new Uint8Array()
    const seqno = message.seqno ?? new Uint8Array()
    return `${Buffer.from(from.buffer, from.byteOffset, from.byteLength).toString('base64')}/${Buffer.from(seqno.buffer, seqno.byteOffset, seqno.byteLength).toString('hex')}`
  }
}

/** Creates (does not start) the libp2p node. */
export async function createNode(init: NodeInit): Promise<Node> {
  const swarmKey = init.swarmKey
  return createLibp2p<NodeServices>({
    privateKey: init.privateKey,
    start: false,
    addresses: { listen: [`/ip4/${init.listen.host}/tcp/${init.listen.port}`] },
    transports: [tcp()],
    connectionProtector: swarmKey === undefined ? undefined : preSharedKey({ psk: swarmKey, timeout: 3_000 }),
    connectionEncrypters: [noise()],
    // No yamux keep-alive pings of its own: the liveness loop pings every connection already.
    streamMuxers: [yamux({ enableKeepAlive: false })],
    connectionManager: { ...connectionSettings },
    // libp2p's monitor opens a ping stream per connection every interval; the cluster's own
    // liveness loop (liveness.ts) pings with one muxer frame instead, same interval and timeout.
    connectionMonitor: { enabled: false },
    services: {
      identify: identify(),
      ping: ping(),
      pubsub: gossipsub({
        ...gossipSettings,
        maxInboundDataLength: maxGossipFrameBytes,
        fastMsgIdFn: fastMessageId(init.onGossipFrame),
        maxOutboundBufferSize: 16 * 1024 * 1024,
      }),
    },
  })
}
