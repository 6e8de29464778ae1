/**
 * This node in the fleet (issue 6): membership, and over it one carrier per protocol (hold-sync,
 * trials, signals, config-snapshot). Here: holds taken in from anywhere, restored from Postgres at
 * start and written back by the region's leader every 30 s. Without a fleet secret the node runs
 * alone, and still snapshots and restores its holds.
 */
import type { Logger } from 'pino'
import type { Cluster, ClusterStats } from '@switchboard/cluster'
import { holdId, parseHoldEntry, type HoldEntry, type Holds, type LoadBalancerSettings, type RateLimitBackoff, type TrialEntry, type Trials } from '@switchboard/routing'
import { loadHoldSnapshot, saveHoldSnapshot, snapshotInfo, type DatabasePool as Pool } from '@switchboard/store'
import type { Metrics } from '../observability/metrics.ts'
import type { Dispatcher } from '../dispatch/dispatcher.ts'
import { plausibleHold, type ConfigChange } from './messages.ts'
import type { KeyLimiter } from '../access/limits.ts'
import { carryTrials, type TrialsCarrier } from './trials.ts'
import { carryHolds, type HoldSync } from './hold-sync.ts'
import { carrySignals, type Signals } from './signals.ts'
import { carryClock, PeerClocks } from './clock.ts'
import { FleetSignals, type RepairVia } from './fleet-signals.ts'
import { clusterView, type ClusterView } from './view.ts'
import { atMost } from '../boot/shutdown.ts'
import { carryConfigSnapshot, type ConfigSnapshotCarrier, type ConfigSnapshotSource } from './config-snapshot.ts'

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
  antiEntropyEveryMs?: number
}

export interface Fleet {
  publishHolds(entries: readonly HoldEntry[]): void
  /** Shares a rate-limit backoff with the region. */
  publishRateLimit(backoff: RateLimitBackoff): void
  /** Shares trial rounds this node changed (or that a peer behind needs) with every node. */
  publishTrials(entries: readonly TrialEntry[]): void
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

/** Restores holds from Postgres, then joins the fleet (if configured) and pulls the peers' set. */
export async function startFleet(components: FleetComponents, init: FleetInit): Promise<Fleet> {
  const { holds, trials, dispatcher, pool, logger, metrics, now } = components
  const started = now()
  /** Set once snapshots are scheduled: asks for one soon after holds change. */
  let changedHolds = () => {}

  const clocks = new PeerClocks()
  const fleetSignals = new FleetSignals(metrics.registry, clocks, now)

  /** Takes entries from Postgres or a peer, bad ones counted; `measured`: gossip or repairs, whose propagation lag counts. */
  const takeIn = (raw: readonly unknown[], source: string, measured?: 'gossip' | RepairVia): number => {
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
    if (measured !== undefined) for (const entry of changed) if (entry.version.nodeId !== init.nodeId) fleetSignals.applied(entry.state === 'held' ? 'hold' : 'release', entry.version.nodeId, entry.version.wallMs)
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
  let holdSync: HoldSync | null = null
  let signals: Signals | null = null
  let clock: { stop(): void } | null = null
  let trialRounds: TrialsCarrier | null = null
  let configShare: ConfigSnapshotCarrier | null = null
  const timers: NodeJS.Timeout[] = []

  if (init.fleetSecret) {
    // Loaded only for a fleet: libp2p is most of a node's modules (a second of a standalone start).
    const { createCluster } = await import('@switchboard/cluster')
    const { nodeId, region, peers, fleetSecret, dataDir } = init
    cluster = await createCluster({
      nodeId, region, peers, fleetSecret, dataDir,
      listen: { host: init.host, port: init.p2pPort },
      log: (level, message, fields) => logger[level]({ ...fields, component: 'cluster' }, message),
      // The join pull below comes first; the rest of the fleet is dialled once it is done.
      joinFirst: true,
    })
    const fleet = cluster
    trialRounds = await carryTrials(fleet, { trials, dispatcher, metrics, logger, now, knownKey: components.knownKey })
    if (components.gatewayKeys) configShare = await carryConfigSnapshot(fleet, components.gatewayKeys, { logger })
    fleetSignals.attach(fleet)
    clock = await carryClock(fleet, { clocks, now, logger })
    signals = await carrySignals(fleet, { ...components, settingsFrom: (nodeId, sentAt) => fleetSignals.applied('settings', nodeId, sentAt) })
    fleet.on('leader:change', (change) => logger.info({ region: change.region, leader: change.leader?.nodeId ?? null }, `leader of region ${change.region}: ${change.leader?.nodeId ?? 'none'}`))
    const trialsCarrier = trialRounds
    holdSync = await carryHolds(fleet, { holds, takeIn, repaired: (via, entries) => fleetSignals.repaired(via, entries), pullTrials: (peerId) => trialsCarrier.pull(peerId), logger, now, random: components.random, peers: init.peers, antiEntropyEveryMs: init.antiEntropyEveryMs })
  } else if (init.peers.length > 0) {
    logger.warn('--peers given without --fleet-secret: running standalone (a fleet needs its secret)')
  }

  const isLeader = () => (cluster ? cluster.leader()?.self === true : true)
  let snapshotting = false
  const snapshot = async () => {
    if (snapshotting) return
    snapshotting = true
    try {
      // Merged with what is stored, under the snapshot lock: another leader may have written newer entries.
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
      fleetSignals.snapshotTaken(now())
    } finally {
      snapshotting = false
    }
  }
  const writeIfLeader = () => {
    // Right after start a node sees only itself and would lead its region: wait a few seconds first.
    if (now() - started < 5_000 || !isLeader()) return
    snapshot().catch((error: unknown) => logger.warn({ err: error }, 'could not write the hold set to Postgres; next round retries'))
  }
  // Besides every 30 s: soon after holds change or this node becomes a leader.
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
  timers.push(setInterval(writeIfLeader, 30_000))
  // Another leader's snapshots too: the age the fleet's Postgres copy has, whoever wrote it.
  const readSnapshotAge = () => void snapshotInfo(pool).then((info) => info && fleetSignals.snapshotTaken(info.takenAt.getTime()), () => {})
  readSnapshotAge()
  timers.push(setInterval(readSnapshotAge, 15_000))
  for (const timer of timers) timer.unref()

  return {
    publishHolds(entries) {
      changedHolds()
      holdSync?.publish(entries)
    },
    publishTrials: (entries) => trialRounds?.publish(entries),
    publishRateLimit: (signal) => signals?.publishRateLimit(signal),
    publishConfig: (change) => signals?.publishConfig(change),
    pullGatewayKeys: async () => (await configShare?.pull()) ?? false,
    clusterStats: () => cluster?.stats() ?? null,
    view: async () => ({ ...(await clusterView({ cluster, pool, holds, isLeader }, init)), signals: fleetSignals.view() }),
    async stop() {
      for (const timer of timers) clearInterval(timer)
      holdSync?.stop()
      clock?.stop()
      configShare?.stop()
      if (soon !== null) clearTimeout(soon)
      // Bounded: after a network cut a pooled connection hangs until TCP gives up.
      if (isLeader()) {
        const written = await atMost(LAST_SNAPSHOT_MS, snapshot().then(() => true, (error: unknown) => logger.warn({ err: error }, 'could not write the last hold snapshot')))
        if (written === undefined) logger.warn(`the last hold snapshot did not land within ${LAST_SNAPSHOT_MS / 1000} s: the peers' and the previous snapshot stand`)
      }
      await cluster?.stop()
    },
  }
}
