/**
 * A real fleet: three node processes in two regions on 127.0.0.1, real
 * libp2p, joined from the three `peers` forms (host:port, a multiaddr, a DNS
 * name). The tests run in order on the same fleet: the kill and restart at
 * the end change it.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FixtureProcess, stopAll } from './harness.ts'
import { freePort } from '@switchboard/test-kit'
import type { Line } from './harness.ts'

const secret = 'fleet-test-secret'
let dataRoot = ''
const ports: Record<string, number> = {}
const nodes: Record<string, FixtureProcess> = {}

function nodeConfig(name: string, region: string, peers: string[], fleetSecret = secret): Record<string, unknown> {
  return { nodeId: name, region, listen: { host: '127.0.0.1', port: ports[name] }, peers, fleetSecret, dataDir: join(dataRoot, name) }
}

const memberNames = (reply: Line): string[] => (reply.members as Array<{ nodeId: string; region: string }>).map((member) => `${member.nodeId}@${member.region}`)
const stats = async (node: FixtureProcess): Promise<{ dropped: { invalid: number; oversized: number }; connections: number }> =>
  (await node.command({ command: 'stats' })).stats as { dropped: { invalid: number; oversized: number }; connections: number }
const received = (node: FixtureProcess, id: string) => (line: Line): boolean => line.event === 'message' && (line.message as { id: string }).id === id

beforeAll(async () => {
  dataRoot = await mkdtemp(join(tmpdir(), 'switchboard-cluster-'))
  for (const name of ['a', 'b', 'c', 'wrong']) ports[name] = await freePort()
  const started = Date.now()
  // a lists b by host:port, b lists a by multiaddr, c knows only a DNS name for a:
  // c must find b through what the members announce.
  ;[nodes.a, nodes.b, nodes.c] = await Promise.all([
    FixtureProcess.start('a', 'node', nodeConfig('a', 'eu', [`127.0.0.1:${ports.b}`])),
    FixtureProcess.start('b', 'node', nodeConfig('b', 'eu', [`/ip4/127.0.0.1/tcp/${ports.a}`])),
    FixtureProcess.start('c', 'node', nodeConfig('c', 'us', [`localhost:${ports.a}`])),
  ])
  const ready = Date.now()
  await Promise.all(Object.values(nodes).map((node) => node.poll({ command: 'members' }, (reply) => memberNames(reply).length === 3)))
  console.log(`fleet: processes ready in ${ready - started} ms, full membership ${Date.now() - ready} ms later`)
}, 90_000)

afterAll(async () => {
  await stopAll()
  if (dataRoot !== '') await rm(dataRoot, { recursive: true, force: true })
})

// Each test waits on processes; on a machine busy with other suites that can take a while.
describe('a fleet of three nodes in two regions', { timeout: 60_000 }, () => {
  it('agrees on members, regions and leaders on every node', async () => {
    for (const node of [nodes.a!, nodes.b!, nodes.c!]) {
      expect(memberNames(await node.command({ command: 'members' }))).toEqual(['a@eu', 'b@eu', 'c@us'])
      expect((await node.command({ command: 'leader', region: 'eu' })).leader).toBe('a')
      expect((await node.command({ command: 'leader', region: 'us' })).leader).toBe('c')
    }
  })

  it('delivers a fleet message to every node and a region message only inside its region', async () => {
    await nodes.a!.command({ command: 'publish', scope: 'fleet', message: { id: 'fleet-1', text: 'to all' } })
    for (const node of [nodes.b!, nodes.c!]) {
      const line = await node.waitFor(received(node, 'fleet-1'))
      expect(line.from).toBe('a')
      expect(line.scope).toBe('fleet')
    }
    await nodes.b!.command({ command: 'publish', scope: 'region', message: { id: 'region-1', text: 'eu only' } })
    // Sent after the region message on the same connection: once c has it, c would have had the other.
    await nodes.b!.command({ command: 'publish', scope: 'fleet', message: { id: 'after-region-1', text: 'marker' } })
    expect((await nodes.a!.waitFor(received(nodes.a!, 'region-1'))).scope).toBe('region')
    await nodes.c!.waitFor(received(nodes.c!, 'after-region-1'))
    await nodes.a!.waitFor(received(nodes.a!, 'after-region-1'))
    expect(nodes.c!.lines.some(received(nodes.c!, 'region-1'))).toBe(false)
  })

  it('serves request/response with replies of 1 MB and of 5 MB (over libp2p default 4 MiB buffers)', async () => {
    for (const size of [1_000_000, 5_000_000]) {
      const reply = await nodes.c!.command({ command: 'request', peerId: nodes.a!.peerId, size })
      expect(reply.error).toBeUndefined()
      expect(reply.length).toBe(size)
      console.log(`request/response: ${size} byte reply in ${Math.round(Number(reply.ms))} ms`)
    }
  })

  it('drops and counts invalid and oversized messages from a member, and keeps running', async () => {
    const rogue = await FixtureProcess.start('rogue', 'rogue', { secret, topics: ['/switchboard/1/test/fleet', '/switchboard/1/_members'] })
    const before = await Promise.all([nodes.a!, nodes.b!, nodes.c!].map(stats))
    for (const port of [ports.a, ports.b, ports.c]) expect((await rogue.command({ command: 'dial', address: `/ip4/127.0.0.1/tcp/${port}` })).error).toBeUndefined()
    // Wait until every node announced its subscriptions to the rogue, or its publishes go nowhere.
    await rogue.poll({ command: 'publish', topic: '/switchboard/1/test/fleet', envelope: { id: 'probe', text: 'x' } }, (reply) => reply.recipients === 3)
    const bad = [
      { text: 'not json at all' },
      { text: '{"node":"rogue","at":1,"body":{"id":42}}' },
      { envelope: { id: 'wrong-shape', text: 7 } },
      { topic: '/switchboard/1/_members', envelope: { nodeId: '', region: 'eu', addresses: [] } },
    ]
    for (const message of bad) await rogue.command({ command: 'publish', topic: '/switchboard/1/test/fleet', ...message })
    await rogue.command({ command: 'publish', topic: '/switchboard/1/test/fleet', text: 'y', repeat: 5000 })
    await rogue.command({ command: 'publish', topic: '/switchboard/1/test/fleet', envelope: { id: 'rogue-valid', text: 'fine' } })
    // And garbage on a request/response protocol gets an error answer, not a crash.
    const refused = await rogue.command({ command: 'request', peerId: nodes.a!.peerId, protocol: '/switchboard/rpc/1/test/blob', text: '{"size":"big"' })
    expect(refused.reply).toMatchObject({ ok: false, code: 'invalid_request' })
    for (const [index, node] of [nodes.a!, nodes.b!, nodes.c!].entries()) {
      await node.waitFor(received(node, 'rogue-valid'))
      const after = await stats(node)
      expect(after.dropped.invalid - before[index]!.dropped.invalid).toBe(node === nodes.a ? 5 : 4)
      expect(after.dropped.oversized - before[index]!.dropped.oversized).toBe(1)
      expect(node.lines.some(received(node, 'wrong-shape'))).toBe(false)
      expect(memberNames(await node.command({ command: 'members' }))).toEqual(['a@eu', 'b@eu', 'c@us'])
    }
    await rogue.kill()
  })

  it('keeps out a node with another fleet secret and a stranger without one', async () => {
    const wrong = await FixtureProcess.start('wrong', 'node', nodeConfig('wrong', 'eu', [`127.0.0.1:${ports.a}`, `127.0.0.1:${ports.c}`], 'another-secret'))
    const stranger = await FixtureProcess.start('stranger', 'rogue', { topics: ['/switchboard/1/test/fleet'] })
    // Its dialer has tried both peers at least twice, and failed.
    await wrong.waitFor((line) => line.event === 'log' && line.message === 'dial failed' && String((line.fields as { target: string }).target).includes(`/${ports.a}`))
    await wrong.waitFor((line) => line.event === 'log' && line.message === 'dial failed' && String((line.fields as { target: string }).target).includes(`/${ports.c}`), 20_000)
    expect((await stranger.command({ command: 'dial', address: `/ip4/127.0.0.1/tcp/${ports.a}` })).error).toBeDefined()
    await wrong.command({ command: 'publish', scope: 'fleet', message: { id: 'from-wrong', text: 'let me in' } })
    await stranger.command({ command: 'publish', topic: '/switchboard/1/test/fleet', envelope: { id: 'from-stranger', text: 'let me in' } })
    await nodes.a!.command({ command: 'publish', scope: 'fleet', message: { id: 'after-strangers', text: 'marker' } })
    for (const node of [nodes.b!, nodes.c!]) await node.waitFor(received(node, 'after-strangers'))
    for (const node of [nodes.a!, nodes.b!, nodes.c!]) {
      expect(node.lines.some((line) => received(node, 'from-wrong')(line) || received(node, 'from-stranger')(line))).toBe(false)
      expect(memberNames(await node.command({ command: 'members' }))).toEqual(['a@eu', 'b@eu', 'c@us'])
    }
    expect(memberNames(await wrong.command({ command: 'members' }))).toEqual(['wrong@eu'])
    expect((await stats(wrong)).connections).toBe(0)
    expect((await stranger.command({ command: 'connections' })).connections).toBe(0)
    await wrong.kill()
    await stranger.kill()
  })

  it('drops a SIGKILLed leader within seconds, elects the next one, and stays connected without its seed', async () => {
    const marks = { b: nodes.b!.lines.length, c: nodes.c!.lines.length }
    const killedAt = Date.now()
    await nodes.a!.kill('SIGKILL')
    await nodes.b!.waitFor((line) => line.event === 'member:leave' && line.nodeId === 'a', 15_000, marks.b)
    const droppedAfter = Date.now() - killedAt
    await nodes.c!.waitFor((line) => line.event === 'member:leave' && line.nodeId === 'a', 15_000, marks.c)
    await nodes.b!.waitFor((line) => line.event === 'leader:change' && line.region === 'eu' && line.leader === 'b', 5_000, marks.b)
    console.log(`kill -> dropped from membership: ${droppedAfter} ms`)
    for (const node of [nodes.b!, nodes.c!]) {
      expect(memberNames(await node.command({ command: 'members' }))).toEqual(['b@eu', 'c@us'])
      expect((await node.command({ command: 'leader', region: 'eu' })).leader).toBe('b')
    }
    // a was the only peer c was told about: c and b must still reach each other.
    await nodes.c!.command({ command: 'publish', scope: 'fleet', message: { id: 'without-a', text: 'still here' } })
    await nodes.b!.waitFor(received(nodes.b!, 'without-a'))
  })

  it('restarts a killed node with the same peer id; it rejoins and leads its region again', async () => {
    const previousPeerId = nodes.a!.peerId
    const marks = { b: nodes.b!.lines.length, c: nodes.c!.lines.length }
    const started = Date.now()
    nodes.a = await FixtureProcess.start('a', 'node', nodeConfig('a', 'eu', [`127.0.0.1:${ports.b}`]))
    expect(nodes.a.peerId).toBe(previousPeerId)
    await nodes.b!.waitFor((line) => line.event === 'member:join' && line.nodeId === 'a', 15_000, marks.b)
    await nodes.c!.waitFor((line) => line.event === 'member:join' && line.nodeId === 'a', 15_000, marks.c)
    console.log(`restart -> rejoined on every node: ${Date.now() - started} ms`)
    await nodes.a.poll({ command: 'members' }, (reply) => memberNames(reply).length === 3)
    for (const node of [nodes.a, nodes.b!, nodes.c!]) expect((await node.command({ command: 'leader', region: 'eu' })).leader).toBe('a')
    await nodes.a.command({ command: 'publish', scope: 'fleet', message: { id: 'back', text: 'hello again' } })
    for (const node of [nodes.b!, nodes.c!]) await node.waitFor(received(node, 'back'))
  })

  it('a node that stops cleanly is dropped at once as having left', async () => {
    const mark = nodes.c!.lines.length
    await nodes.b!.command({ command: 'stop' })
    const leave = await nodes.c!.waitFor((line) => line.event === 'member:leave' && line.nodeId === 'b', 15_000, mark)
    expect(leave.reason).toBe('left')
  })
})
