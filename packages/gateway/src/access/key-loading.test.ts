import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { configuredRecords, GatewayKeyLoader, takesKeys } from './key-loading.ts'
import { GatewayKeyRing, hashSecret } from './gateway-keys.ts'
import type { DatabasePool } from '@switchboard/store'

const SECRET = 'sk-config-key-0123456789abcdef'
const configured = [{ name: 'app', value: SECRET, requests_per_minute: 60 }]
const logger = pino({ level: 'silent' })
const record = (name: string, secret: string) => ({ id: `gk_${name}`, name, secretHash: hashSecret(secret), providers: null, models: null, requestsPerMinute: null, tokensPerMinute: null })
/** A pool that never answers, like Postgres down. */
const downPool = { query: async () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })) } as unknown as DatabasePool

describe('where gateway keys come from', () => {
  it('lets a better source replace a worse one, never the other way (Postgres > peer > config.json)', () => {
    expect(takesKeys(null, 'config')).toBe(true)
    expect(takesKeys('config', 'peer')).toBe(true)
    expect(takesKeys('peer', 'peer')).toBe(true)
    expect(takesKeys('peer', 'postgres')).toBe(true)
    expect(takesKeys('postgres', 'peer')).toBe(false)
    expect(takesKeys('peer', 'config')).toBe(false)
  })

  it('holds config.json\'s keys by the hash of their secret, with a stable id, never the secret', () => {
    const [key] = configuredRecords(configured)
    expect(key).toMatchObject({ name: 'app', secretHash: hashSecret(SECRET), requestsPerMinute: 60 })
    expect(key!.id).toMatch(/^gk_config_[0-9a-f]{12}$/)
    expect(configuredRecords(configured)[0]!.id).toBe(key!.id)
    expect(JSON.stringify(key)).not.toContain(SECRET)
  })

  it('with Postgres down: serves config.json\'s keys, takes a peer\'s over them, and shares only what came from Postgres', async () => {
    const ring = new GatewayKeyRing()
    const seen: string[] = []
    const loader = new GatewayKeyLoader({ pool: downPool, ring, logger, onLoaded: (from) => seen.push(from) }, configured)
    await expect(loader.fromStore()).rejects.toThrow()
    expect(seen).toEqual([])
    expect(loader.wantsPeerKeys()).toBe(true)
    expect(loader.fromConfig()).toBe(true)
    expect(ring.find(SECRET)?.name).toBe('app')
    // Config.json's keys are this node's own view: never shared as the fleet's.
    expect(loader.shared()).toBeNull()
    expect(loader.wantsPeerKeys()).toBe(true)

    expect(loader.fromPeer([record('api-made', 'sk-api-made-key-0000000000'), { ...record('revoked', 'sk-revoked-0000000000'), revokedAt: new Date() }], 'node-a')).toBe(true)
    expect(seen.at(-1)).toBe('peer')
    expect(ring.find('sk-api-made-key-0000000000')?.name).toBe('api-made')
    expect(ring.find('sk-revoked-0000000000')).toBeUndefined()
    // The peer's set is the fleet's: config.json's key is not in it, so it no longer serves here.
    expect(ring.find(SECRET)).toBeUndefined()
    expect(loader.fromConfig()).toBe(false)
    expect(loader.wantsPeerKeys()).toBe(false)
    expect(loader.shared()).toMatchObject({ from: 'peer', keys: [{ name: 'api-made' }] })
    expect(seen).toEqual(['config', 'peer'])
  })

  it('keeps keys read from Postgres over a peer\'s, unless Postgres just failed this node after a change a peer announced', async () => {
    // A row as the store's query names its columns (aliased to the StoredGatewayKey fields).
    const row = { id: 'gk_db', name: 'db', secretHash: hashSecret('sk-db-key-00000000000000'), redacted: 'sk-db-...0000', providers: null, models: null, requestsPerMinute: null, tokensPerMinute: null, origin: 'api', createdAt: new Date(), revokedAt: null }
    const pool = { query: async () => ({ rows: [row] }) } as unknown as DatabasePool
    const ring = new GatewayKeyRing()
    const loader = new GatewayKeyLoader({ pool, ring, logger }, [])
    await loader.fromStore()
    expect(loader.shared()).toMatchObject({ from: 'postgres', keys: [{ name: 'db' }] })
    expect(loader.fromPeer([record('other', 'sk-other-00000000000000')], 'node-b')).toBe(false)
    expect(ring.find('sk-db-key-00000000000000')?.name).toBe('db')
    // A peer revoked "db" and announced it; this node could not read Postgres: the peer's fresh set wins.
    expect(loader.fromPeer([record('other', 'sk-other-00000000000000')], 'node-b', { storeFailed: true })).toBe(true)
    expect(ring.find('sk-db-key-00000000000000')).toBeUndefined()
    expect(loader.shared()?.from).toBe('peer')
  })

  it('without keys in config.json and Postgres down, loads nothing (the node is not ready)', () => {
    const loader = new GatewayKeyLoader({ pool: downPool, ring: new GatewayKeyRing(), logger }, [])
    expect(loader.fromConfig()).toBe(false)
    expect(loader.shared()).toBeNull()
    expect(loader.wantsPeerKeys()).toBe(true)
  })
})
