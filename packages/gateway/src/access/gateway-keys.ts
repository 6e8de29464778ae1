/** The fleet's active gateway keys in memory, found by the SHA-256 of the secret a caller sends. */
import { createHash, randomBytes } from 'node:crypto'
import type { StoredGatewayKey } from '@switchboard/store'

/** A gateway key as the request path uses it. */
export interface GatewayKey {
  id: string
  name: string
  /** Providers it may use; null = any. */
  providers: ReadonlySet<string> | null
  /** Models it may use; null = any. */
  models: ReadonlySet<string> | null
  requestsPerMinute: number | null
  tokensPerMinute: number | null
}

/** What the ring needs of a key: the stored row, a peer's copy of it, or config.json's key hashed here (never a secret). */
export type GatewayKeyRecord = Pick<StoredGatewayKey, 'id' | 'name' | 'secretHash' | 'providers' | 'models' | 'requestsPerMinute' | 'tokensPerMinute'> & { revokedAt?: Date | null }

/** The hex SHA-256 of a secret: what the store keeps and the ring is keyed by. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** A new secret for the API to show once: `sk-sb-` and 32 random URL-safe characters. */
export function newSecret(): string {
  return `sk-sb-${randomBytes(24).toString('base64url')}`
}

/** How a secret is shown after creation: its first 6 characters and its last 4. */
export function redactSecret(secret: string): string {
  return `${secret.slice(0, 6)}...${secret.slice(-4)}`
}

/** A declared key's scope and limits (config.json's or the API's fields) as the store and the ring keep them. */
export function keyLimits(key: { providers?: string[] | undefined; models?: string[] | undefined; requests_per_minute?: number | undefined; tokens_per_minute?: number | undefined }): Pick<GatewayKeyRecord, 'providers' | 'models' | 'requestsPerMinute' | 'tokensPerMinute'> {
  return { providers: key.providers ?? null, models: key.models ?? null, requestsPerMinute: key.requests_per_minute ?? null, tokensPerMinute: key.tokens_per_minute ?? null }
}

/** The active keys, by secret hash. */
export class GatewayKeyRing {
  private byHash = new Map<string, GatewayKey>()
  private byId = new Map<string, GatewayKey>()

  get size(): number {
    return this.byHash.size
  }

  /** Replaces every key with the active ones given. */
  replace(stored: readonly GatewayKeyRecord[]): void {
    this.byHash = new Map()
    this.byId = new Map()
    for (const row of stored) this.insert(row)
  }

  /** Adds (or replaces) one key, e.g. one just created here, before the store is read again. */
  put(row: GatewayKeyRecord): void {
    this.remove(row.id)
    this.insert(row)
  }

  private insert(row: GatewayKeyRecord): void {
    if (row.revokedAt) return
    const key: GatewayKey = { id: row.id, name: row.name, providers: row.providers ? new Set(row.providers) : null, models: row.models ? new Set(row.models) : null, requestsPerMinute: row.requestsPerMinute, tokensPerMinute: row.tokensPerMinute }
    this.byHash.set(row.secretHash, key)
    this.byId.set(row.id, key)
  }

  /** Drops a key at once (revoked here, before the store is read again). */
  remove(id: string): void {
    if (!this.byId.delete(id)) return
    for (const [hash, key] of this.byHash) if (key.id === id) this.byHash.delete(hash)
  }

  /** The key a caller's secret names, if active. A map lookup by digest: nothing to learn from its timing. */
  find(secret: string): GatewayKey | undefined {
    return this.byHash.get(hashSecret(secret))
  }
}
