import { describe, expect, it } from 'vitest'
import { hashSecret } from '../access/gateway-keys.ts'
import { keysOf, snapshotOf } from './config-snapshot.ts'
import { configSnapshot } from './messages.ts'

const SECRET = 'sk-sb-a-secret-nobody-should-see-0123'
const key = { id: 'gk_1', name: 'app', secretHash: hashSecret(SECRET), providers: ['openai'], models: null, requestsPerMinute: 60, tokensPerMinute: null, redacted: 'sk-sb-...0123' }

describe('config/snapshot/1', () => {
  it('carries gateway keys as hashes, never a secret or its redacted form, and reads back what it carried', () => {
    const wire = configSnapshot.parse(JSON.parse(JSON.stringify(snapshotOf({ from: 'postgres', keys: [key] }))))
    expect(JSON.stringify(wire)).not.toContain(SECRET)
    expect(JSON.stringify(wire)).not.toContain('sk-sb-')
    const { redacted: _redacted, ...record } = key
    expect(keysOf(wire)).toEqual([record])
  })

  it('says null when the peer has no keys from Postgres, which is not an empty set', () => {
    expect(snapshotOf(null)).toEqual({ gateway_keys: null })
    expect(keysOf({ gateway_keys: null })).toBeNull()
    expect(keysOf({ gateway_keys: { from: 'peer', keys: [] } })).toEqual([])
  })

  it('refuses anything that is not a hash where the hash goes', () => {
    const bad = { gateway_keys: { from: 'postgres', keys: [{ id: 'gk_1', name: 'app', secret_hash: SECRET, providers: null, models: null, requests_per_minute: null, tokens_per_minute: null }] } }
    expect(configSnapshot.safeParse(bad).success).toBe(false)
    expect(configSnapshot.safeParse({ gateway_keys: { from: 'config', keys: [] } }).success).toBe(false)
  })
})
