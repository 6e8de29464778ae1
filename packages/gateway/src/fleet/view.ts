/** What `GET /api/cluster` shows of this node's fleet: members, regions, leaders, the last hold snapshot. */
import type { Cluster } from '@switchboard/cluster'
import type { Holds } from '@switchboard/routing'
import type { FleetSignalsView } from './fleet-signals.ts'
import { snapshotInfo, type DatabasePool, type SnapshotInfo } from '@switchboard/store'

/** What GET /api/cluster shows. */
export interface ClusterView {
  node: { node_id: string; peer_id: string | null; region: string; addresses: string[]; leader: boolean }
  mode: 'fleet' | 'standalone'
  members: { node_id: string; peer_id: string; region: string; addresses: string[]; since: string; last_seen: string }[]
  regions: Record<string, string[]>
  leaders: Record<string, string>
  last_snapshot: { taken_at: string; node_id: string; region: string; entries: number } | null
  holds: number
  dropped: Record<string, number>
  /** The fleet's own health as this node sees it (issue 40): absent on a standalone node's worker that does not join. */
  signals?: FleetSignalsView
}

/** Builds the view; a node without a cluster is alone in its region and leads it. */
export async function clusterView(components: { cluster: Cluster | null; pool: DatabasePool; holds: Holds; isLeader: () => boolean }, init: { nodeId: string; region: string }): Promise<ClusterView> {
  const { cluster, pool, holds, isLeader } = components
  const members = cluster?.members() ?? []
  const regions: Record<string, string[]> = {}
  const leaders: Record<string, string> = {}
  for (const member of members) (regions[member.region] ??= []).push(member.nodeId)
  for (const region of Object.keys(regions)) {
    const leader = cluster?.leader(region)
    if (leader) leaders[region] = leader.nodeId
  }
  if (!cluster) {
    regions[init.region] = [init.nodeId]
    leaders[init.region] = init.nodeId
  }
  let last: SnapshotInfo | null = null
  try {
    last = await snapshotInfo(pool)
  } catch {
    // Postgres away: the view still answers, without the snapshot line.
  }
  const stats = cluster?.stats()
  return {
    node: { node_id: init.nodeId, peer_id: cluster?.peerId ?? null, region: init.region, addresses: cluster?.addresses ?? [], leader: isLeader() },
    mode: cluster ? 'fleet' : 'standalone',
    members: members.map((member) => ({ node_id: member.nodeId, peer_id: member.peerId, region: member.region, addresses: member.addresses, since: new Date(member.since).toISOString(), last_seen: new Date(member.lastSeen).toISOString() })),
    regions,
    leaders,
    last_snapshot: last ? { taken_at: last.takenAt.toISOString(), node_id: last.nodeId, region: last.region, entries: last.entries } : null,
    holds: holds.conditions().length,
    dropped: stats ? { ...stats.dropped } : {},
  }
}
