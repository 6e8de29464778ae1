/** The hold set's share of the fleet (issue 6): gossip on `holds`, a full pull on join, a sync with each peer that appears, anti-entropy every 10 s. */
import type { Cluster } from '@switchboard/cluster'
import { compareVersions, differingBuckets, holdId, type HoldEntry } from '@switchboard/routing'
import type { FleetComponents } from './fleet.ts'
import type { RepairVia } from './fleet-signals.ts'
import { bucketsRequest, digestRequest, digestResponse, entriesRequest, holdBatch, PROTOCOLS, versionsResponse, MAX_PULL_IDS, type VersionsResponse } from './messages.ts'

/** Differing buckets holding at most this many entries here are pulled whole, without the version step. */
const SMALL_BUCKETS = 64

export interface HoldSyncInit extends Pick<FleetComponents, 'holds' | 'logger' | 'now' | 'random'> {
  /** Takes entries from a peer: checked, merged, news for routing; returns how many changed. */
  takeIn(raw: readonly unknown[], source: string, measured?: 'gossip' | RepairVia): number
  /** Entries a sync brought that gossip missed. */
  repaired(via: RepairVia, entries: number): void
  /** After the join's hold pull: the trial rounds, from the same peer. */
  pullTrials(peerId: string): Promise<void>
  peers: readonly string[]
  antiEntropyEveryMs?: number
}

/** The hold set on the wire. */
export interface HoldSync {
  publish(entries: readonly HoldEntry[]): void
  stop(): void
}

/** Serves the hold set to peers, pulls it on join (before the rest of the fleet is dialled), then keeps it in sync. */
export async function carryHolds(fleet: Cluster, init: HoldSyncInit): Promise<HoldSync> {
  const { holds, takeIn, logger, now } = init
  const topic = fleet.topic('holds', holdBatch, { scope: 'fleet', maxBytes: 1024 * 1024 })
  topic.subscribe((message, _from, meta) => {
    if (meta.peerId !== fleet.peerId) takeIn(message.entries, `gossip from ${meta.nodeId}`, 'gossip')
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

  /**
   * What to pull from a peer whose digest differs in `buckets`: small buckets whole; large ones
   * by id and version first, pulling only what the peer has newer. A peer without the version
   * step, a difference too large to list, or one versions do not show goes by bucket.
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
  const syncWith = async (peer: { peerId: string; nodeId: string }, why: RepairVia): Promise<number> => {
    holds.collect(now())
    const theirs = await fleet.request(peer.peerId, PROTOCOLS.digest, {}, digestResponse)
    const differing = differingBuckets(holds.digest(), theirs)
    if (differing.length === 0) return 0
    const pulled = await pullDiffering(peer, differing)
    const merged = takeIn(pulled, `${why} with ${peer.nodeId}`, why)
    if (merged > 0) init.repaired(why, merged)
    if (merged > 0) logger.info({ peer: peer.nodeId, merged }, `${why} brought ${merged} hold entries`)
    return merged
  }
  // A peer that appears is synced with at once, one at a time (meeting 49 peers at once pulls the
  // difference once, not from each: issue 19), and only after this node's own join pull.
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

  // Join: pull the full set from one peer before serving, when one answers the first dial.
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
        await init.pullTrials(peer.peerId)
        return
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  // Connected to the configured peers only so far (joinFirst): now the rest of the fleet is dialled.
  await join().catch((error: unknown) => logger.warn({ err: error }, 'could not pull the hold set on join; anti-entropy will'))
  fleet.openMesh()
  joining = false
  for (const member of metWhileJoining.values()) if (fleet.member(member.peerId) !== undefined) syncOnJoin(member)
  metWhileJoining.clear()

  // Anti-entropy with one random peer, one round at a time (on a loaded machine a round can outlast the interval).
  let syncing = false
  const antiEntropy = setInterval(() => {
    const others = fleet.members().filter((member) => !member.self)
    const peer = others[Math.floor(init.random() * others.length)]
    if (!peer || syncing) return
    syncing = true
    syncWith(peer, 'anti-entropy')
      .catch((error: unknown) => logger.debug({ err: error }, 'anti-entropy round failed'))
      .finally(() => (syncing = false))
  }, init.antiEntropyEveryMs ?? 10_000)
  antiEntropy.unref()

  return {
    publish: (entries) => void topic.publish({ entries: [...entries] }).catch((error: unknown) => logger.warn({ err: error }, 'could not publish holds')),
    stop: () => clearInterval(antiEntropy),
  }
}
