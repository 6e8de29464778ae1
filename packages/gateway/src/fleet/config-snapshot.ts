/**
 * The fleet's gateway keys for a node that cannot read Postgres (issue 37, item 5): every node
 * answers `config/snapshot/1` with the keys it read there (hashes, never secrets); a node that
 * wants them asks each peer it meets, and one a second, until one has a set. The key loader
 * decides what to take.
 */
import type { Logger } from 'pino'
import type { Cluster } from '@switchboard/cluster'
import type { GatewayKeyRecord } from '../access/gateway-keys.ts'
import type { GatewayKeyLoader, SharedKeys } from '../access/key-loading.ts'
import { configSnapshot, digestRequest, PROTOCOLS, type ConfigSnapshot } from './messages.ts'

/** What the carrier needs of the node's gateway keys: the loader's keys to share, whether it wants a peer's, and the taking of them. */
export type ConfigSnapshotSource = Pick<GatewayKeyLoader, 'shared' | 'wantsPeerKeys' | 'fromPeer'>

export interface ConfigSnapshotCarrier {
  /** Asks peers now (a change was announced and Postgres does not answer here); true when one read its set from Postgres. */
  pull(): Promise<boolean>
  stop(): void
}

/** The wire form of shared keys. */
export function snapshotOf(shared: SharedKeys | null): ConfigSnapshot {
  if (shared === null) return { gateway_keys: null }
  const keys = shared.keys.map((key) => ({ id: key.id, name: key.name, secret_hash: key.secretHash, providers: key.providers, models: key.models, requests_per_minute: key.requestsPerMinute, tokens_per_minute: key.tokensPerMinute }))
  return { gateway_keys: { from: shared.from, keys } }
}

/** The keys of a peer's answer, or null when it had none to share. */
export function keysOf(snapshot: ConfigSnapshot): GatewayKeyRecord[] | null {
  const shared = snapshot.gateway_keys
  if (shared === null) return null
  return shared.keys.map((key) => ({ id: key.id, name: key.name, secretHash: key.secret_hash, providers: key.providers, models: key.models, requestsPerMinute: key.requests_per_minute, tokensPerMinute: key.tokens_per_minute }))
}

/** Serves `config/snapshot/1` and asks peers while the source wants their keys. */
export async function carryConfigSnapshot(fleet: Cluster, source: ConfigSnapshotSource, init: { logger: Logger }): Promise<ConfigSnapshotCarrier> {
  await fleet.handle(PROTOCOLS.config, digestRequest, configSnapshot, async () => snapshotOf(source.shared()))

  const askOne = async (peer: { peerId: string; nodeId: string }, storeFailed: boolean): Promise<boolean> => {
    try {
      const snapshot = await fleet.request(peer.peerId, PROTOCOLS.config, {}, configSnapshot, { timeoutMs: 3_000 })
      const keys = keysOf(snapshot)
      if (keys === null || (storeFailed && snapshot.gateway_keys?.from !== 'postgres')) return false
      source.fromPeer(keys, peer.nodeId, { storeFailed })
      return true
    } catch (error) {
      // A peer on an older version does not speak the protocol; another may.
      init.logger.debug({ err: error, peer: peer.nodeId }, 'could not ask a peer for the fleet\'s gateway keys')
      return false
    }
  }
  // One peer per round (a peer that just joined first), so a fleet that boots without Postgres does not ask n² times a second.
  let asking: Promise<boolean> | null = null
  let round = 0
  const askIfWanted = (joined?: { peerId: string; nodeId: string }) => {
    if (asking !== null || !source.wantsPeerKeys()) return
    const others = fleet.members().filter((member) => !member.self)
    const peer = joined ?? others[round++ % Math.max(1, others.length)]
    if (peer !== undefined) asking = askOne(peer, false).finally(() => (asking = null))
  }
  fleet.on('member:join', (member) => {
    if (!member.self) askIfWanted(member)
  })
  const timer = setInterval(() => askIfWanted(), 1_000)
  timer.unref()
  askIfWanted()
  return {
    async pull() {
      for (const peer of fleet.members()) if (!peer.self && (await askOne(peer, true))) return true
      return false
    },
    stop: () => clearInterval(timer),
  }
}
