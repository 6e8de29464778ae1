import { describe, expect, it } from 'vitest'
import { Emitter } from './events.ts'
import { Membership } from './membership.ts'
import type { Heartbeat, MembershipEvents } from './membership.ts'

function setup(self = { nodeId: 'node-b', region: 'eu' }) {
  const seen: string[] = []
  const events = new Emitter<MembershipEvents>((event, error) => seen.push(`error ${event} ${String(error)}`))
  events.on('member:join', (member) => seen.push(`join ${member.nodeId}`))
  events.on('member:leave', (member, reason) => seen.push(`leave ${member.nodeId} ${reason}`))
  events.on('leader:change', (change) => seen.push(`leader ${change.region} ${change.previous?.nodeId ?? '-'} -> ${change.leader?.nodeId ?? '-'}`))
  const connected = new Set<string>()
  const membership = new Membership({ ...self, peerId: `peer-${self.nodeId}`, addresses: [], since: 0 }, { memberTimeoutMs: 5_000, suspectMs: 2_000 }, { events, isConnected: (peerId) => connected.has(peerId) })
  return { membership, seen, connected }
}
const beat = (nodeId: string, region: string, extra: Partial<Heartbeat> = {}): Heartbeat => ({ nodeId, region, addresses: [`/ip4/10.0.0.1/tcp/1/p2p/peer-${nodeId}`], startedAt: 1, ...extra })

describe('membership', () => {
  it('starts with itself as the only member and leader of its region', () => {
    const { membership, seen } = setup()
    expect(membership.members().map((member) => member.nodeId)).toEqual(['node-b'])
    expect(membership.leader('eu')?.self).toBe(true)
    expect(seen).toEqual([])
  })

  it('adds members from heartbeats and picks the lowest node id of each region as leader', () => {
    const { membership, seen } = setup()
    membership.heard('peer-node-c', beat('node-c', 'us'), 100)
    membership.heard('peer-node-a', beat('node-a', 'eu'), 200)
    membership.heard('peer-node-a', beat('node-a', 'eu'), 300)
    expect(seen).toEqual(['join node-c', 'leader us - -> node-c', 'join node-a', 'leader eu node-b -> node-a'])
    expect(membership.members().map((member) => `${member.nodeId}@${member.region}`)).toEqual(['node-a@eu', 'node-b@eu', 'node-c@us'])
    expect(membership.member('peer-node-a')).toMatchObject({ since: 200, lastSeen: 300, self: false })
  })

  it('drops a member not heard within the timeout and hands leadership on', () => {
    const { membership, seen } = setup()
    membership.heard('peer-node-a', beat('node-a', 'eu'), 0)
    seen.length = 0
    membership.sweep(4_999)
    expect(membership.members()).toHaveLength(2)
    membership.sweep(5_000)
    expect(seen).toEqual(['leave node-a timeout', 'leader eu node-a -> node-b'])
  })

  it('drops a disconnected member after the suspect time unless a connection to it is back', () => {
    const { membership, seen, connected } = setup()
    membership.heard('peer-node-a', beat('node-a', 'eu'), 0)
    membership.heard('peer-node-c', beat('node-c', 'us'), 0)
    seen.length = 0
    membership.disconnected('peer-node-a', 1_000)
    membership.disconnected('peer-node-c', 1_000)
    // a's last heartbeat, relayed by another node after its connection closed, is no sign of life.
    membership.heard('peer-node-a', beat('node-a', 'eu'), 1_200)
    connected.add('peer-node-c')
    membership.connected('peer-node-c')
    membership.sweep(3_000)
    expect(seen).toEqual(['leave node-a disconnected', 'leader eu node-a -> node-b'])
    expect(membership.members().map((member) => member.nodeId)).toEqual(['node-b', 'node-c'])
  })

  it('does not let a late heartbeat bring a dropped node back, unless it is connected again', () => {
    const { membership, seen, connected } = setup()
    membership.heard('peer-node-a', beat('node-a', 'eu'), 0)
    membership.disconnected('peer-node-a', 100)
    membership.sweep(2_100)
    seen.length = 0
    membership.heard('peer-node-a', beat('node-a', 'eu'), 2_200)
    expect(seen).toEqual([])
    connected.add('peer-node-a')
    membership.heard('peer-node-a', beat('node-a', 'eu'), 2_300)
    expect(seen).toEqual(['join node-a', 'leader eu node-b -> node-a'])
  })

  it('lets a restarted node back at once, even heard only through others', () => {
    const { membership, seen } = setup()
    membership.heard('peer-node-a', beat('node-a', 'eu'), 0)
    membership.disconnected('peer-node-a', 100)
    membership.sweep(2_100)
    seen.length = 0
    membership.heard('peer-node-a', beat('node-a', 'eu', { startedAt: 2_050 }), 2_200)
    expect(seen).toEqual(['join node-a', 'leader eu node-b -> node-a'])
  })

  it('sees a node that restarted before it was dropped as restarted, without a leader change', () => {
    const { membership, seen } = setup()
    membership.heard('peer-node-a', beat('node-a', 'eu'), 0)
    membership.disconnected('peer-node-a', 100)
    membership.heard('peer-node-a', beat('node-a', 'eu', { startedAt: 1_000 }), 1_000)
    membership.sweep(3_000)
    expect(membership.member('peer-node-a')).toMatchObject({ startedAt: 1_000, since: 1_000 })
    expect(membership.leader('eu')).toMatchObject({ nodeId: 'node-a', startedAt: 1_000 })
    expect(seen).toEqual(['join node-a', 'leader eu node-b -> node-a', 'leave node-a restarted', 'join node-a'])
    // A late heartbeat of the old run changes nothing.
    membership.heard('peer-node-a', beat('node-a', 'eu'), 3_100)
    expect(membership.member('peer-node-a')?.startedAt).toBe(1_000)
    expect(seen).toHaveLength(4)
  })

  it('keeps a connected member alive without heartbeats, and times it out once unconnected', () => {
    const { membership, seen, connected } = setup()
    membership.heard('peer-node-a', beat('node-a', 'eu'), 0)
    connected.add('peer-node-a')
    membership.sweep(60_000)
    expect(membership.member('peer-node-a')?.lastSeen).toBe(60_000)
    connected.delete('peer-node-a')
    membership.sweep(64_999)
    expect(membership.members()).toHaveLength(2)
    membership.sweep(65_000)
    expect(seen.slice(-2)).toEqual(['leave node-a timeout', 'leader eu node-a -> node-b'])
  })

  it('lets a dropped node back after the timeout even if heard only through others', () => {
    const { membership, seen } = setup()
    membership.heard('peer-node-a', beat('node-a', 'eu'), 0)
    membership.sweep(5_000)
    seen.length = 0
    membership.heard('peer-node-a', beat('node-a', 'eu'), 10_000)
    expect(seen).toEqual(['join node-a', 'leader eu node-b -> node-a'])
  })

  it('drops a member at once when it says it is leaving, and the region without a node loses its leader', () => {
    const { membership, seen } = setup()
    membership.heard('peer-node-c', beat('node-c', 'us'), 0)
    membership.heard('peer-node-c', beat('node-c', 'us', { leaving: true }), 10)
    expect(seen).toEqual(['join node-c', 'leader us - -> node-c', 'leave node-c left', 'leader us node-c -> -'])
    expect(membership.leader('us')).toBeUndefined()
  })

  it('treats a peer that comes back with another node id or region as a leave and a join', () => {
    const { membership, seen } = setup()
    membership.heard('peer-x', beat('node-x', 'eu'), 0)
    seen.length = 0
    membership.heard('peer-x', beat('node-x', 'us'), 10)
    expect(seen).toEqual(['leave node-x left', 'join node-x', 'leader us - -> node-x'])
  })

  it('breaks a node id tie by peer id, so every node elects the same leader', () => {
    const { membership } = setup({ nodeId: 'same', region: 'eu' })
    membership.heard('peer-aaa', beat('same', 'eu'), 0)
    expect(membership.leader('eu')?.peerId).toBe('peer-aaa')
  })

  it('ignores its own heartbeats and keeps a throwing listener from breaking the view', () => {
    const { membership, seen } = setup()
    const events = new Emitter<MembershipEvents>((event) => seen.push(`error ${event}`))
    events.on('member:join', () => {
      throw new Error('listener bug')
    })
    const other = new Membership({ nodeId: 'n', region: 'eu', peerId: 'p', addresses: [], since: 0 }, { memberTimeoutMs: 5_000, suspectMs: 2_000 }, { events, isConnected: () => false })
    other.heard('p', beat('n', 'eu'), 0)
    other.heard('q', beat('m', 'eu'), 0)
    expect(seen).toEqual(['error member:join'])
    expect(other.members().map((member) => member.nodeId)).toEqual(['m', 'n'])
    membership.heard('peer-node-b', beat('node-b', 'eu'), 0)
    expect(membership.members()).toHaveLength(1)
  })
})
