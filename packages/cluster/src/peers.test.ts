import { multiaddr } from '@multiformats/multiaddr'
import { describe, expect, it } from 'vitest'
import { Dialer, parsePeer, resolveHost } from './peers.ts'
import type { DialerComponents } from './peers.ts'

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

describe('the dialer of a joining node (joinFirst)', () => {
  /** A stand-in libp2p node: records dials; a dial "connects" the address's peer. */
  function fakeNode() {
    const connected = new Set<string>()
    const dialled: string[] = []
    const node = {
      getPeers: () => [...connected].map((id) => ({ toString: () => id })),
      getMultiaddrs: () => [multiaddr('/ip4/127.0.0.1/tcp/1/p2p/12D3KooWSelf')],
      dial: async (addresses: Array<{ toString(): string }>) => {
        const address = addresses[0]!.toString()
        dialled.push(address)
        const peer = address.includes('/p2p/') ? address.split('/p2p/')[1]! : `peer-at-${address}`
        connected.add(peer)
        return { remotePeer: { toString: () => peer } }
      },
    }
    return { node: node as unknown as DialerComponents['node'], connected, dialled }
  }
  const member = { peerId: '12D3KooWDDuVCWs7L3pRBKQ7nfg7UMhM2LJjKnNKMmq4tZ9WxD1L', addresses: ['/ip4/127.0.0.1/tcp/4003/p2p/12D3KooWDDuVCWs7L3pRBKQ7nfg7UMhM2LJjKnNKMmq4tZ9WxD1L'] }
  const seeds = [parsePeer('127.0.0.1:4001', 0), parsePeer('127.0.0.1:4002', 0)]
  const options = { intervalMs: 60_000, resolveEveryMs: 60_000, dialTimeoutMs: 1_000 }

  it('dials only its configured peers, and nothing more once one answers, until the mesh is opened', async () => {
    const { node, dialled } = fakeNode()
    const dialer = new Dialer({ node, members: () => [member], log: () => {} }, seeds, { ...options, held: true })
    await dialer.round()
    expect(dialled).toEqual(['/ip4/127.0.0.1/tcp/4001', '/ip4/127.0.0.1/tcp/4002'])
    await dialer.round()
    expect(dialled).toHaveLength(2)
    expect(dialer.openMesh()).toBe(true)
    expect(dialer.openMesh()).toBe(false)
    await dialer.round()
    dialer.stop()
    expect(dialled).toContain(member.addresses[0])
  })

  it('dials every member it knows of at once when not held', async () => {
    const { node, dialled } = fakeNode()
    const dialer = new Dialer({ node, members: () => [member], log: () => {} }, seeds, options)
    await dialer.round()
    expect(dialled).toEqual(['/ip4/127.0.0.1/tcp/4001', '/ip4/127.0.0.1/tcp/4002', member.addresses[0]])
    dialer.stop()
  })

  it('takes who is connected from the set the cluster keeps, without asking libp2p each round', async () => {
    const { node, dialled } = fakeNode()
    const asked = { getPeers: 0 }
    const counting = { ...node, getPeers: () => (asked.getPeers++, node.getPeers()) } as unknown as DialerComponents['node']
    const connected = new Set([member.peerId, 'peer-at-/ip4/127.0.0.1/tcp/4001', 'peer-at-/ip4/127.0.0.1/tcp/4002'])
    const dialer = new Dialer({ node: counting, members: () => [member], connected: () => connected, log: () => {} }, seeds, options)
    await dialer.round()
    await dialer.round()
    // The seeds' peer ids are not known until a dial found them: dialled once each, then never again.
    expect(dialled).toEqual(['/ip4/127.0.0.1/tcp/4001', '/ip4/127.0.0.1/tcp/4002'])
    expect(asked.getPeers).toBe(0)
    dialer.stop()
  })
})
