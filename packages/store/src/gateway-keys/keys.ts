/**
 * Gateway keys (issue 13): the keys callers of the inference API send. The store keeps a
 * SHA-256 of each secret, never the secret; the gateway hashes before it calls in here.
 * Revoking sets `revoked_at`, and a revoked secret is never made active again by an import.
 */
import type { Pool } from 'pg'
import { randomBytes } from 'node:crypto'
import { inTransaction } from '../transaction.ts'

/** A gateway key as stored (no secret). */
export interface StoredGatewayKey {
  id: string
  name: string
  secretHash: string
  /** The secret's first characters and last four, for people to tell keys apart. */
  redacted: string
  providers: string[] | null
  models: string[] | null
  requestsPerMinute: number | null
  tokensPerMinute: number | null
  origin: 'config' | 'api'
  createdAt: Date
  revokedAt: Date | null
}

/** What creating or importing a key needs. */
export type NewGatewayKey = Pick<StoredGatewayKey, 'name' | 'secretHash' | 'redacted'> & Partial<Pick<StoredGatewayKey, 'providers' | 'models' | 'requestsPerMinute' | 'tokensPerMinute'>>

/** Thrown when a name or secret is taken by an active key. */
export class GatewayKeyConflict extends Error {
  readonly code = 'gateway_key_exists'
}

/** The columns of a `StoredGatewayKey`, named as its fields. */
const COLUMNS = `id, name, secret_hash AS "secretHash", redacted, providers, models, requests_per_minute AS "requestsPerMinute",
  tokens_per_minute AS "tokensPerMinute", origin, created_at AS "createdAt", revoked_at AS "revokedAt"`

const newId = () => `gk_${randomBytes(9).toString('base64url')}`

/** A key's columns from `name` to `tokens_per_minute`, in table order. */
const valuesOf = (key: NewGatewayKey) => [key.name, key.secretHash, key.redacted, key.providers ?? null, key.models ?? null, key.requestsPerMinute ?? null, key.tokensPerMinute ?? null]

/** Adds a key: its id, `valuesOf` it, and its origin. */
const INSERT = 'INSERT INTO gateway_keys (id, name, secret_hash, redacted, providers, models, requests_per_minute, tokens_per_minute, origin) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)'

/** Active keys (revoked ones with `includeRevoked`), oldest first. */
export async function listGatewayKeys(pool: Pool, options: { includeRevoked?: boolean } = {}): Promise<StoredGatewayKey[]> {
  const rows = await pool.query<StoredGatewayKey>(`SELECT ${COLUMNS} FROM gateway_keys ${options.includeRevoked ? '' : 'WHERE revoked_at IS NULL'} ORDER BY created_at, id`)
  return rows.rows
}

/** Adds a key from the API; throws GatewayKeyConflict when an active key has the name (or anyone the secret). */
export async function createGatewayKey(pool: Pool, key: NewGatewayKey): Promise<StoredGatewayKey> {
  try {
    const rows = await pool.query<StoredGatewayKey>(`${INSERT} RETURNING ${COLUMNS}`, [newId(), ...valuesOf(key), 'api'])
    return rows.rows[0]!
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new GatewayKeyConflict(`a gateway key named "${key.name}" already exists`)
    throw error
  }
}

/** Revokes a key; false when there is no active key with that id. */
export async function revokeGatewayKey(pool: Pool, id: string): Promise<boolean> {
  const result = await pool.query('UPDATE gateway_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [id])
  return (result.rowCount ?? 0) > 0
}

/** Serialises imports of config.json's keys by nodes booting together. */
const IMPORT_LOCK = 0x5357_474b // "SWGK"

/**
 * Applies config.json's `gateway_keys`: a name not stored yet is added, an active key of that
 * name takes the file's secret and limits; a secret that was revoked stays revoked (change the
 * value to issue a new one). Keys added through the API are left alone.
 */
export async function importGatewayKeys(pool: Pool, keys: readonly NewGatewayKey[]): Promise<{ added: number; updated: number; skippedRevoked: number }> {
  const counts = { added: 0, updated: 0, skippedRevoked: 0 }
  if (keys.length === 0) return counts
  return inTransaction(pool, async (client) => {
    for (const key of keys) {
      const same = await client.query<{ id: string; revoked_at: Date | null }>('SELECT id, revoked_at FROM gateway_keys WHERE secret_hash = $1', [key.secretHash])
      const existing = same.rows[0]
      const active = existing?.revoked_at ? undefined : await client.query<{ id: string }>('SELECT id FROM gateway_keys WHERE name = $1 AND revoked_at IS NULL', [key.name])
      const current = active?.rows[0]
      // A revoked secret, or one an active key of another name holds while this name has its own, is left alone.
      if (existing?.revoked_at || (current && existing && existing.id !== current.id)) {
        counts.skippedRevoked++
        continue
      }
      const values = valuesOf(key)
      // The active key of this name takes the file's secret; else the same secret under another name moves to this one.
      const target = current ?? existing
      if (target) {
        await client.query(
          `UPDATE gateway_keys SET name = $2, secret_hash = $3, redacted = $4, providers = $5, models = $6, requests_per_minute = $7, tokens_per_minute = $8 WHERE id = $1`,
          [target.id, ...values],
        )
        counts.updated++
      } else {
        await client.query(INSERT, [newId(), ...values, 'config'])
        counts.added++
      }
    }
    return counts
  }, IMPORT_LOCK)
}
