import { describe, expect, it } from 'vitest'
import { parsePeer, resolveHost } from './peers.ts'

describe('peers entries', () => {
  it('parses host:port, bare names, IPv6 and multiaddrs', () => {
    expect(parsePeer('10.0.0.2:4001', 9000)).toEqual({ kind: 'host', host: '10.0.0.2', port: 4001 })
    expect(parsePeer(' switchboard-headless ', 9000)).toEqual({ kind: 'host', host: 'switchboard-headless', port: 9000 })
    expect(parsePeer('[::1]:4001', 9000)).toEqual({ kind: 'host', host: '::1', port: 4001 })
    expect(parsePeer('/ip4/10.0.0.2/tcp/4001', 9000)).toEqual({ kind: 'multiaddr', address: '/ip4/10.0.0.2/tcp/4001' })
    // A /dns4 multiaddr is resolved by us, to every address of the name.
    expect(parsePeer('/dns4/peers.default.svc/tcp/4001', 9000)).toEqual({ kind: 'host', host: 'peers.default.svc', port: 4001 })
  })

  it('refuses entries it cannot dial', () => {
    expect(() => parsePeer('/not-a-protocol/1', 9000)).toThrow(expect.objectContaining({ code: 'invalid_init' }))
    expect(() => parsePeer('name-without-port', 0)).toThrow(expect.objectContaining({ code: 'invalid_init' }))
    expect(() => parsePeer('host:99999', 9000)).toThrow(expect.objectContaining({ code: 'invalid_init' }))
  })

  it('resolves localhost (from /etc/hosts, which resolve4 does not read) and passes IPs through', async () => {
    expect(await resolveHost('localhost')).toContain('127.0.0.1')
    expect(await resolveHost('10.1.2.3')).toEqual(['10.1.2.3'])
  })
})
