/**
 * This node in the fleet (issue 6): held keys replicated to every node as a versioned set
 * (gossip, a full pull on join, anti-entropy every 10 s), rate-limit backoffs shared within
 * the region, config changes announced fleet-wide, and the region's leader writing the hold
 * set to Postgres every 30 s. Without a fleet secret the node runs alone, and still snapshots
 * and restores its holds.
 */
import type { DatabasePool as Pool } from '@switchboard/store'
import type { Logger } from 'pino'
import type { Cluster, ClusterStats, Topic } from '@switchboard/cluster'
import { compareVersions, differingBuckets, holdId, parseHoldEntry, type HoldEntry, type Holds, type LoadBalancerSettings, type RateLimitBackoff, type TrialEntry, type Trials } from '@switchboard/routing'
import { loadHoldSnapshot, saveHoldSnapshot } from '@switchboard/store'
import type { Metrics } from '../observability/metrics.ts'
import type { Dispatcher } from '../dispatch/dispatcher.ts'
import { bucketsRequest, configChange, digestRequest, digestResponse, entriesRequest, holdBatch, leaseRequest, leaseResponse, PROTOCOLS, rateLimitSignal, tokenUsage, versionsResponse, MAX_PULL_IDS, MAX_RATE_LIMIT_MS, plausibleHold, type ConfigChange, type VersionsResponse } from './messages.ts'
import type { KeyLimiter } from '../access/limits.ts'
import { carryTrials, type TrialsCarrier } from './trials.ts'
import { clusterView, type ClusterView } from './view.ts'
import { atMost } from '../boot/shutdown.ts'
import { carryConfigSnapshot, type ConfigSnapshotCarrier, type ConfigSnapshotSource } from './config-snapshot.ts'

export type { ClusterView } from './view.ts'

export interface FleetComponents {
  holds: Holds
  /** Trial rounds of failed routes: told how many peers this node hears, and read whole for a joining peer. */
  trials: Trials
  dispatcher: Dispatcher
  pool: Pool
  logger: Logger
  metrics: Metrics
  now: () => number
  random: () => number
  /** Re-read providers from the store (a peer changed them). */
  reloadProviders(): Promise<void>
  /** True when this node knows the key: a hold on a key nobody configured is nonsense, dropped. */
  knownKey?(provider: string, keyId: string): boolean
  /** Apply settings a peer saved. */
  applySettings(settings: LoadBalancerSettings): void
  /** Re-read gateway keys from the store (a peer created or revoked one). */
  reloadGatewayKeys(): Promise<void>
  /** Per-key limits: leases asked of the owner, token counts gossiped. */
  limiter: KeyLimiter
  /** The node's gateway keys, shared with peers that cannot read Postgres and asked of them when this node cannot. */
  gatewayKeys?: ConfigSnapshotSource
}

export interface FleetInit {
  nodeId: string
  region: string
  /** Without a secret the node runs standalone. */
  fleetSecret?: string
  host: string
  p2pPort: number
  peers: string[]
  dataDir: string
  snapshotEveryMs?: number
  antiEntropyEveryMs?: number
}

export interface Fleet {
  /** Shares hold entries this node changed. */
  publishHolds(entries: readonly HoldEntry[]): void
  /** Shares a rate-limit backoff with the region. */
  publishRateLimit(backoff: RateLimitBackoff): void
  /** Shares trial rounds this node changed (or that a peer behind needs) with every node. */
  publishTrials(entries: readonly TrialEntry[]): void
  /** Tells every node to pick up a config change. */
  publishConfig(change: ConfigChange): void
  /** Asks peers for the fleet's gateway keys (this node cannot read Postgres); true when one shared them. */
  pullGatewayKeys(): Promise<boolean>
  view(): Promise<ClusterView>
  /** The cluster's counters (null when standalone). */
  clusterStats(): ClusterStats | null
  /** Leaves the fleet; the leader writes a last snapshot first. */
  stop(): Promise<void>
}

/** How long a stopping leader waits for its last hold snapshot to land. */
const LAST_SNAPSHOT_MS = 2_000

/** Differing buckets holding at most this many entries here are pulled whole, without the version step. */
const SMALL_BUCKETS = 64

/** Restores holds from Postgres, then joins the fleet (if configured) and pulls the peers' set. */
export async function startFleet(components: FleetComponents, init: FleetInit): Promise<Fleet> {
  const { holds, trials, dispatcher, pool, logger, metrics, now } = components
  const started = now()
  /** Set once snapshots are scheduled: asks for one soon after holds change. */
  let changedHolds = () => {}

  /** Takes entries from Postgres or a peer: each checked, bad ones counted; released routes recover. */
  const takeIn = (raw: readonly unknown[], source: string): number => {
    const entries: HoldEntry[] = []
    const at = now()
    for (const value of raw) {
      const entry = parseHoldEntry(value)
      if (entry === null) metrics.clusterDropped.inc({ reason: 'invalid_hold' })
      else if (!plausibleHold(entry, at)) metrics.clusterDropped.inc({ reason: 'implausible_hold' })
      else if (entry.state === 'held' && components.knownKey && !components.knownKey(entry.provider, entry.keyId)) metrics.clusterDropped.inc({ reason: 'unknown_key' })
      else entries.push(entry)
    }
    const changed = holds.merge(entries, now())
    if (changed.length > 0) {
      changedHolds()
      dispatcher.merged(changed)
      logger.debug({ source, changed: changed.length }, 'merged holds')
    }
    return changed.length
  }

  // Holds survive restarts: the last snapshot first, then whatever peers know that is newer.
  try {
    const { holds: stored } = await loadHoldSnapshot(pool)
    const restored = takeIn(stored.map((row) => row.entry), 'postgres')
    if (restored > 0) logger.info({ holds: restored }, `restored ${restored} hold entries from Postgres`)
  } catch (error) {
    logger.warn({ err: error }, 'could not restore holds from Postgres; starting without them')
  }

  let cluster: Cluster | null = null
  let holdsTopic: Topic<{ entries: unknown[] }> | null = null
  let rateTopic: Topic<{ provider: string; key_id: string; model: string; until_ms: number }> | null = null
  let configTopic: Topic<ConfigChange> | null = null
  let trialRounds: TrialsCarrier | null = null
  let configShare: ConfigSnapshotCarrier | null = null
  const timers: NodeJS.Timeout[] = []

  if (init.fleetSecret) {
    // Loaded only for a fleet: libp2p is most of a node's modules, and a standalone node (a
    // laptop, the twenty stop/start cycles of issue 18) starts about a second sooner without it.
    const { createCluster } = await import('@switchboard/cluster')
    cluster = await createCluster({
      nodeId: init.nodeId,
      region: init.region,
      listen: { host: init.host, port: init.p2pPort },
      peers: init.peers,
      fleetSecret: init.fleetSecret,
      dataDir: init.dataDir,
      log: (level, message, fields) => logger[level]({ ...fields, component: 'cluster' }, message),
      // The join pull below comes first; the rest of the fleet is dialled once it is done.
      joinFirst: true,
    })
    const fleet = cluster
    holdsTopic = fleet.topic('holds', holdBatch, { scope: 'fleet', maxBytes: 1024 * 1024 })
    rateTopic = fleet.topic('rate-limits', rateLimitSignal, { scope: 'region', coalesceKey: (message) => `${message.provider}\u0000${message.key_id}\u0000${message.model}` })
    configTopic = fleet.topic('config', configChange, { scope: 'fleet', coalesceKey: (message) => message.kind })
    trialRounds = await carryTrials(fleet, { trials, dispatcher, metrics, logger, now, knownKey: components.knownKey })
    if (components.gatewayKeys) configShare = await carryConfigSnapshot(fleet, components.gatewayKeys, { logger })
    holdsTopic.subscribe((message, _from, meta) => {
      if (meta.peerId !== fleet.peerId) takeIn(message.entries, `gossip from ${meta.nodeId}`)
    })
    rateTopic.subscribe((message, _from, meta) => {
      if (meta.peerId === fleet.peerId) return
      if (message.until_ms > now() + MAX_RATE_LIMIT_MS) return void metrics.clusterDropped.inc({ reason: 'implausible_rate_limit' })
      dispatcher.backOff({ provider: message.provider, keyId: message.key_id, model: message.model, untilMs: message.until_ms })
    })
    configTopic.subscribe((message, _from, meta) => {
      if (meta.peerId === fleet.peerId) return
      if (message.kind === 'settings') components.applySettings(message.settings)
      else if (message.kind === 'gateway_keys') components.reloadGatewayKeys().catch((error: unknown) => logger.warn({ err: error }, 'could not reload gateway keys a peer changed'))
      else components.reloadProviders().catch((error: unknown) => logger.warn({ err: error }, 'could not reload providers a peer changed'))
    })
    // Gateway key limits: the lowest node id alive owns every key's request count and leases it out.
    const usageTopic = fleet.topic('gateway-key-usage', tokenUsage, { scope: 'fleet', coalesceKey: (message) => message.key_id })
    usageTopic.subscribe((message, _from, meta) => {
      if (meta.peerId !== fleet.peerId) components.limiter.peerUsage(meta.nodeId, message)
    })
    await fleet.handle(PROTOCOLS.lease, leaseRequest, leaseResponse, async (request) => ({ granted: components.limiter.grant(request.key_id, request.window, request.limit) }))
    components.limiter.setPeers({
      owner: () => {
        let owner: { nodeId: string; peerId: string; self: boolean } | undefined
        for (const member of fleet.members()) if (owner === undefined || member.nodeId < owner.nodeId) owner = member
        return owner === undefined || owner.self ? null : owner.peerId
      },
      nodes: () => Math.max(1, fleet.members().length),
      lease: async (owner, request) => (await fleet.request(owner, PROTOCOLS.lease, request, leaseResponse, { timeoutMs: 2_000 })).granted,
      publishTokens: (usage) => {
        usageTopic.publish(usage).catch((error: unknown) => logger.debug({ err: error }, 'could not publish gateway key usage'))
      },
    })
    await fleet.handle(PROTOCOLS.snapshot, digestRequest, holdBatch, async () => ({ entries: holds.entries() }))
    await fleet.handle(PROTOCOLS.digest, digestRequest, digestResponse, async () => {
      holds.collect(now())
      return holds.digest()
    })
    await fleet.handle(PROTOCOLS.buckets, bucketsRequest, holdBatch, async (request) => ({ entries: holds.entriesInBuckets(request.buckets) }))
    await fleet.handle(PROTOCOLS.versions, bucketsRequest, versionsResponse, async (request) => ({
      versions: holds.entriesInBuckets(request.buckets).map((entry) => [holdId(entry), entry.version.wallMs, entry.version.counter, entry.version.nodeId] as [string, number, number, string]),
    }))
    await fleet.handle(PROTOCOLS.entries, entriesRequest, holdBatch, async (request) => {
      const wanted = new Set(request.ids)
      return { entries: holds.entries().filter((entry) => wanted.has(holdId(entry))) }
    })
    fleet.on('leader:change', (change) => logger.info({ region: change.region, leader: change.leader?.nodeId ?? null }, `leader of region ${change.region}: ${change.leader?.nodeId ?? 'none'}`))

    /**
     * What to pull from a peer whose digest differs in `buckets`. Small buckets are pulled
     * whole. Large ones (a set of thousands of holds puts hundreds in each bucket) are compared
     * by hold id and version first, and only the entries the peer has newer are pulled, so a
     * round costs what differs, not 1/16 of the set per differing bucket. A peer that does not
     * speak the version step yet, a difference too large to list, or one the versions do not
     * show (same version, other content) is pulled by bucket as before.
     */
    const pullDiffering = async (peer: { peerId: string }, buckets: number[]): Promise<unknown[]> => {
      const mine = holds.entriesInBuckets(buckets)
      const byBucket = async () => (await fleet.request(peer.peerId, PROTOCOLS.buckets, { buckets }, holdBatch)).entries
      if (mine.length <= SMALL_BUCKETS) return byBucket()
      let versions: VersionsResponse['versions']
      try {
        versions = (await fleet.request(peer.peerId, PROTOCOLS.versions, { buckets }, versionsResponse)).versions
      } catch (error) {
        logger.debug({ err: error }, 'version step refused; pulling whole buckets')
        return byBucket()
      }
      const local = new Map(mine.map((entry) => [holdId(entry), entry.version]))
      const wanted: string[] = []
      let theyLack = local.size
      for (const [id, wallMs, counter, nodeId] of versions) {
        const version = local.get(id)
        if (version !== undefined) theyLack--
        if (version === undefined || compareVersions({ wallMs, counter, nodeId }, version) > 0) wanted.push(id)
      }
      if (wanted.length > MAX_PULL_IDS) return byBucket()
      if (wanted.length === 0) return theyLack > 0 ? [] : byBucket()
      return (await fleet.request(peer.peerId, PROTOCOLS.entries, { ids: wanted }, holdBatch)).entries
    }
    // Catch up with a peer: compare digests, pull what differs (anti-entropy's round).
    const syncWith = async (peer: { peerId: string; nodeId: string }, why: string): Promise<number> => {
      holds.collect(now())
      const theirs = await fleet.request(peer.peerId, PROTOCOLS.digest, {}, digestResponse)
      const differing = differingBuckets(holds.digest(), theirs)
      if (differing.length === 0) return 0
      const pulled = await pullDiffering(peer, differing)
      const merged = takeIn(pulled, `${why} with ${peer.nodeId}`)
      if (merged > 0) logger.info({ peer: peer.nodeId, merged }, `${why} brought ${merged} hold entries`)
      return merged
    }
    // A peer that appears (a late start, a restart, the end of a partition) is synced with at
    // once, both ways (it does the same on its side), rather than at the next anti-entropy round.
    // One at a time: a node that meets 49 peers at once compares digests with each in turn, so
    // only the first difference is pulled, not the same buckets from every peer (issue 19). While
    // this node pulls its first hold set (below), peers it meets wait until that is done.
    let syncs: Promise<unknown> = Promise.resolve()
    const syncOnJoin = (member: { peerId: string; nodeId: string }) => {
      syncs = syncs.then(() =>
        syncWith(member, 'sync on join').catch((error: unknown) => logger.debug({ err: error, peer: member.nodeId }, 'sync on join failed; anti-entropy will repair')),
      )
    }
    let joining = true
    const metWhileJoining = new Map<string, { peerId: string; nodeId: string }>()
    fleet.on('member:join', (member) => {
      if (member.self) return
      if (joining) metWhileJoining.set(member.peerId, member)
      else syncOnJoin(member)
    })

    // Join: pull the full set from one peer before serving, but only when a peer answers:
    // with none connected after the first dial of every configured peer, serve at once.
    const join = async () => {
      const connected = await Promise.race([fleet.dialed(), new Promise<number>((resolve) => setTimeout(() => resolve(-1), 5_000).unref())])
      if (connected === 0) {
        if (init.peers.length > 0) logger.info('no peer answered yet: serving now; holds sync when peers appear')
        return
      }
      for (let tries = 0; tries < 50; tries++) {
        const peer = fleet.members().find((member) => !member.self)
        if (peer) {
          const snapshot = await fleet.request(peer.peerId, PROTOCOLS.snapshot, {}, holdBatch)
          const merged = takeIn(snapshot.entries, `join from ${peer.nodeId}`)
          logger.info({ peer: peer.nodeId, entries: snapshot.entries.length, merged }, 'pulled the hold set from a peer')
          await trialRounds?.pull(peer.peerId)
          return
        }
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    // Connected to the configured peers only so far (joinFirst), so the pull did not wait behind
    // the set-up of a connection to every member. Now the rest of the fleet is dialled, and each
    // new peer synced with as it joins.
    await join().catch((error: unknown) => logger.warn({ err: error }, 'could not pull the hold set on join; anti-entropy will'))
    fleet.openMesh()
    joining = false
    for (const member of metWhileJoining.values()) if (fleet.member(member.peerId) !== undefined) syncOnJoin(member)
    metWhileJoining.clear()

    // Anti-entropy: compare digests with one random peer, pull the buckets that differ.
    timers.push(
      setInterval(() => {
        const others = fleet.members().filter((member) => !member.self)
        const peer = others[Math.floor(components.random() * others.length)]
        if (!peer) return
        syncWith(peer, 'anti-entropy').catch((error: unknown) => logger.debug({ err: error }, 'anti-entropy round failed'))
      }, init.antiEntropyEveryMs ?? 10_000),
    )
  } else if (init.peers.length > 0) {
    logger.warn('--peers given without --fleet-secret: running standalone (a fleet needs its secret)')
  }

  const isLeader = () => (cluster ? cluster.leader()?.self === true : true)
  let snapshotting = false
  const snapshot = async () => {
    if (snapshotting) return
    snapshotting = true
    try {
      // Merged with what is stored, under the snapshot lock: another leader (the other side of a
      // partition, another region) may have written newer entries this node has not heard of.
      const written = await saveHoldSnapshot(
        pool,
        (stored) => {
          takeIn(stored.map((row) => row.entry), 'the stored snapshot')
          holds.collect(now())
          return holds.entries().map((entry) => ({ id: holdId(entry), entry }))
        },
        { nodeId: init.nodeId, region: init.region },
      )
      logger.debug({ entries: written }, 'wrote the hold set to Postgres')
    } finally {
      snapshotting = false
    }
  }
  const writeIfLeader = () => {
    // Right after start a node sees only itself and would lead its region: wait a few seconds first.
    if (now() - started < 5_000 || !isLeader()) return
    snapshot().catch((error: unknown) => logger.warn({ err: error }, 'could not write the hold set to Postgres; next round retries'))
  }
  // Besides every 30 s: soon after holds change, and soon after this node becomes a leader, so a
  // leader that restarts often (or a fleet that churns) never leaves Postgres far behind.
  let soon: NodeJS.Timeout | null = null
  const snapshotSoon = (delayMs: number) => {
    if (soon !== null) return
    soon = setTimeout(() => {
      soon = null
      if (now() - started < 5_000) return snapshotSoon(5_000 - (now() - started))
      writeIfLeader()
    }, delayMs)
    soon.unref()
  }
  changedHolds = () => snapshotSoon(2_000)
  cluster?.on('leader:change', (change) => {
    if (change.leader?.self) snapshotSoon(1_000)
  })
  snapshotSoon(5_000)
  timers.push(setInterval(writeIfLeader, init.snapshotEveryMs ?? 30_000))
  for (const timer of timers) timer.unref()

  return {
    publishHolds(entries) {
      changedHolds()
      holdsTopic?.publish({ entries: [...entries] }).catch((error: unknown) => logger.warn({ err: error }, 'could not publish holds'))
    },
    publishTrials(entries) {
      trialRounds?.publish(entries)
    },
    publishRateLimit(signal) {
      rateTopic?.publish({ provider: signal.provider, key_id: signal.keyId, model: signal.model, until_ms: Math.ceil(signal.untilMs) }).catch((error: unknown) => logger.warn({ err: error }, 'could not publish a rate-limit signal'))
    },
    publishConfig(change) {
      configTopic?.publish(change).catch((error: unknown) => logger.warn({ err: error }, 'could not publish a config change'))
    },
    pullGatewayKeys: async () => (await configShare?.pull()) ?? false,
    clusterStats: () => cluster?.stats() ?? null,
    view: () => clusterView({ cluster, pool, holds, isLeader }, init),
    async stop() {
      for (const timer of timers) clearInterval(timer)
      configShare?.stop()
      if (soon !== null) clearTimeout(soon)
      // Bounded: a pooled connection cut off from Postgres (a network cut) hangs its query until
      // TCP gives up, and the node's own shutdown bound must not be what ends the wait.
      if (isLeader()) {
        const written = await atMost(LAST_SNAPSHOT_MS, snapshot().then(() => true, (error: unknown) => logger.warn({ err: error }, 'could not write the last hold snapshot')))
        if (written === undefined) logger.warn(`the last hold snapshot did not land within ${LAST_SNAPSHOT_MS / 1000} s: the peers' and the previous snapshot stand`)
      }
      await cluster?.stop()
    },
  }
}
