import { describe, expect, it } from 'vitest'
import { NodeSha256 } from './hash.ts'

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

describe('NodeSha256 (the SigV4 signer\'s hash)', () => {
  it('hashes as SHA-256 (FIPS 180-2 "abc")', async () => {
    const hash = new NodeSha256()
    hash.update('abc')
    expect(hex(await hash.digest())).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  it('keys HMAC-SHA256 with a string or bytes secret (RFC 4231 test case 2), and starts over on reset', async () => {
    for (const secret of ['Jefe', new TextEncoder().encode('Jefe')]) {
      const hmac = new NodeSha256(secret)
      hmac.update('stale')
      hmac.reset()
      hmac.update(new TextEncoder().encode('what do ya want '))
      hmac.update('for nothing?')
      expect(hex(await hmac.digest())).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843')
    }
  })
})
