/**
 * Where a node's gateway keys come from (issue 37, item 5): Postgres, else a peer that read them
 * there (`config/snapshot/1`, secret hashes only), else config.json's, hashed here. A better
 * source replaces a worse one, never the other way; until one answered the node says it is
 * starting (boot/readiness.ts).
 */
import { createHash } from 'node:crypto'
import type { Logger } from 'pino'
import { importGatewayKeys, listGatewayKeys, type DatabasePool } from '@switchboard/store'
import type { GatewayKeySource as ConfiguredKey } from '../config/load.ts'
import type { GatewayKeysFrom } from '../boot/readiness.ts'
import { hashSecret, keyLimits, redactSecret, type GatewayKeyRecord, type GatewayKeyRing } from './gateway-keys.ts'

const RANK: Record<GatewayKeysFrom, number> = { config: 1, peer: 2, postgres: 3 }

/** True when keys offered from `offered` replace the ones loaded from `current` (null: none yet). */
export function takesKeys(current: GatewayKeysFrom | null, offered: GatewayKeysFrom): boolean {
  return current === null || RANK[offered] >= RANK[current]
}

/** config.json's keys as the ring holds them while Postgres is away: hashed, with an id derived from the name. */
export function configuredRecords(keys: readonly ConfiguredKey[]): GatewayKeyRecord[] {
  return keys.map((key) => ({
    id: `gk_config_${createHash('sha256').update(key.name).digest('hex').slice(0, 12)}`,
    name: key.name,
    secretHash: hashSecret(key.value),
    ...keyLimits(key),
  }))
}

/** What this node may share with a peer: keys it read from Postgres (itself or through a peer), else null. */
export interface SharedKeys {
  from: 'postgres' | 'peer'
  keys: readonly GatewayKeyRecord[]
}

export interface GatewayKeyLoaderComponents {
  pool: DatabasePool
  ring: GatewayKeyRing
  logger: Logger
  /** Told each time the keys were loaded, with where from. */
  onLoaded?(from: GatewayKeysFrom): void
}

/** Loads the ring from the best source that answers and remembers which one it was. */
export class GatewayKeyLoader {
  private loadedFrom: GatewayKeysFrom | null = null
  private records: readonly GatewayKeyRecord[] = []

  constructor(
    private readonly components: GatewayKeyLoaderComponents,
    private readonly configured: readonly ConfiguredKey[],
  ) {}

  /** True while a peer's keys would be better than what the ring holds. */
  wantsPeerKeys(): boolean {
    return this.loadedFrom === null || this.loadedFrom === 'config'
  }

  /** Reads the active keys from Postgres, first importing config.json's (hashed; revoked ones stay revoked) with `importConfigured`; throws when it does not answer (the ring keeps what it has). */
  async fromStore(importConfigured = false): Promise<void> {
    if (importConfigured && this.configured.length > 0) {
      const imported = await importGatewayKeys(
        this.components.pool,
        this.configured.map((key) => ({ name: key.name, secretHash: hashSecret(key.value), redacted: redactSecret(key.value), ...keyLimits(key) })),
      )
      if (imported.skippedRevoked > 0) this.components.logger.warn(`${imported.skippedRevoked} gateway key(s) in config.json were revoked earlier and stay revoked; give them a new value to issue them again`)
    }
    this.take(await listGatewayKeys(this.components.pool), 'postgres')
  }

  /** config.json's keys, when nothing better was loaded; false when there are none or something better is loaded. */
  fromConfig(): boolean {
    if (this.configured.length === 0 || !takesKeys(this.loadedFrom, 'config')) return false
    this.take(configuredRecords(this.configured), 'config')
    this.components.logger.warn(`serving ${this.configured.length} gateway key(s) from config.json until Postgres answers or a peer shares the fleet's keys`)
    return true
  }

  /** A peer's keys; false when the ring holds better ones, unless `storeFailed` (this node could not read a change the peer read). */
  fromPeer(keys: readonly GatewayKeyRecord[], peer: string, options: { storeFailed?: boolean } = {}): boolean {
    if (!options.storeFailed && !takesKeys(this.loadedFrom, 'peer')) return false
    const before = this.loadedFrom
    this.take(keys, 'peer')
    if (before !== 'peer') this.components.logger.info({ peer, keys: keys.length }, `gateway keys from peer ${peer} while Postgres is not answering`)
    return true
  }

  shared(): SharedKeys | null {
    if (this.loadedFrom !== 'postgres' && this.loadedFrom !== 'peer') return null
    return { from: this.loadedFrom, keys: this.records }
  }

  private take(records: readonly GatewayKeyRecord[], from: GatewayKeysFrom): void {
    const active = records.filter((record) => !record.revokedAt)
    this.components.ring.replace(active)
    this.records = active
    this.loadedFrom = from
    this.components.onLoaded?.(from)
  }
}
