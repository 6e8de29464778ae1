/**
 * @switchboard/cluster: the fleet layer (README.md tells how it works). One libp2p node per gateway
 * gives it membership with regions and a leader per region (lowest node id alive), typed gossip
 * topics (fleet-wide or region-scoped, schema-checked, the bad ones dropped and counted),
 * request/response between two nodes, and counters for `/metrics`. It knows messages, not routing.
 */
import type { createCluster } from './cluster.ts'
import type { PublishQueueOptions } from './publish-queue.ts'
import type { RpcLimits } from './rpc.ts'

export { createCluster } from './cluster.ts'
export { ClusterError, clusterErrorCodes, type ClusterErrorCode } from './errors.ts'
export type { LeaderChange, LeaveReason, Member } from './membership.ts'
export type { PublishQueueOptions } from './publish-queue.ts'
export type { RequestHandler, RequestOptions, RpcLimits } from './rpc.ts'
export type { ClusterStats, TopicCounters } from './stats.ts'
export type { MessageMeta, Topic, TopicHandler, TopicOptions, TopicScope } from './topics.ts'

/** Where the cluster's log lines go; the gateway passes its pino logger here. */
export type ClusterLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void

/** Timing of membership and dialing (ms). */
export interface ClusterTiming {
  /** Between two heartbeats of this node. */
  heartbeatMs: number
  /** A member with no open connection to this node, not heard for this long, is dropped (a connected one lives while its connection does). */
  memberTimeoutMs: number
  /** After its last connection closes, a member must be heard again within this long or is dropped. */
  suspectMs: number
  /** Longest wait between two dials of a known peer that is not connected (a failed dial is retried after 250 ms, doubling up to this). */
  redialMs: number
  /** Between two DNS resolutions of the names in `peers`. */
  resolveEveryMs: number
}

/** What `createCluster` needs. */
export interface ClusterInit {
  /** This node's id (`--node-id`); leaders are chosen by lowest node id. */
  nodeId: string
  /** This node's region (`--region`). */
  region: string
  /** The p2p TCP listener (`--p2p-port`); port 0 takes any free port. */
  listen: { host: string; port: number }
  /** Other nodes (`--peers`): `host:port`, multiaddrs, or DNS names (re-resolved every `resolveEveryMs`); a bare name uses this node's p2p port. */
  peers: string[]
  /** Pre-shared secret of the fleet (`--fleet-secret`): without the same one, nothing connects. */
  fleetSecret: string
  /** Where the node's private key lives (`peer.key`, mode 0600), so its peer id survives restarts. */
  dataDir: string
  log?: ClusterLog
  timing?: Partial<ClusterTiming>
  /** Limits of the publish queue (gossipsub itself has no backpressure). */
  publish?: Partial<PublishQueueOptions>
  /** Limits of request/response. */
  requests?: Partial<RpcLimits>
  /**
   * Join first, then connect to everyone: the node dials only its `peers`, and none once one is
   * connected, until `openMesh()` (at most 10 s), so it pulls its state before connecting to a
   * large fleet (issue 19). Default false: dial every member learnt at once.
   */
  joinFirst?: boolean
}

/** A running fleet node. */
export type Cluster = Awaited<ReturnType<typeof createCluster>>
