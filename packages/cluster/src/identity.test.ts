import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadOrCreatePrivateKey, privateKeyFileName } from './identity.ts'
import { swarmKeyFromSecret } from './secret.ts'

const made: string[] = []
afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
})

describe('node identity', () => {
  it('creates the key once (mode 0600) and loads the same one after', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cluster-identity-'))
    made.push(root)
    const dataDir = join(root, 'nested', 'node')
    const first = await loadOrCreatePrivateKey(dataDir)
    const second = await loadOrCreatePrivateKey(dataDir)
    expect(second.publicKey.equals(first.publicKey)).toBe(true)
    expect((await stat(join(dataDir, privateKeyFileName))).mode & 0o777).toBe(0o600)
  })
})

describe('fleet secret', () => {
  it('derives the same pnet swarm key from the same secret, and another from another', () => {
    const key = new TextDecoder().decode(swarmKeyFromSecret('s3cret'))
    expect(key).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}$/)
    expect(new TextDecoder().decode(swarmKeyFromSecret('s3cret'))).toBe(key)
    expect(new TextDecoder().decode(swarmKeyFromSecret('s3cret2'))).not.toBe(key)
  })
})
