/**
 * Anti-entropy grows with the difference, not with the hold set (issue 19): two fleet nodes
 * (the gateway's real `startFleet`, holds and sync protocols on real libp2p, in their own
 * processes: `fixtures/fleet-node.ts`) share 10,000 holds; one node gets holds the other never
 * hears of by gossip. Anti-entropy brings exactly those over, and what the other node receives
 * for it is a small part of one digest bucket pulled whole (about 625 entries, ~200 kB here).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FixtureProcess, stopAll } from '../../cluster/test/harness.ts'
import { freePort } from '@switchboard/test-kit'

const fleetNode = { script: fileURLToPath(new URL('./fixtures/fleet-node.ts', import.meta.url)), cwd: fileURLToPath(new URL('..', import.meta.url)) }
const HOLDS = 10_000

afterAll(async () => {
  await stopAll()
})

describe('anti-entropy between two nodes with 10,000 holds', () => {
  it('pulls the few entries that differ, not whole buckets', async () => {
    const ports = [await freePort(), await freePort()]
    const start = async (index: number) =>
      FixtureProcess.start(`node-${index}`, fleetNode, {
        nodeId: `node-${index}`,
        region: 'eu',
        p2pPort: ports[index],
        peers: [`127.0.0.1:${ports[1 - index]}`],
        secret: 'anti-entropy-secret-0123456789',
        dataDir: await mkdtemp(join(tmpdir(), `sb-ae-${index}-`)),
        antiEntropyEveryMs: 300,
      })
    const [a, b] = await Promise.all([start(0), start(1)])
    for (const node of [a!, b!]) await node.poll({ command: 'view' }, (reply) => (reply.members as string[]).length === 2, 30_000)
    for (const node of [a!, b!]) expect((await node.command({ command: 'seed', count: HOLDS })).size).toBe(HOLDS)
    // Both sets equal: let the rounds settle, then count what b receives from here on.
    await b!.poll({ command: 'count' }, (reply) => reply.size === HOLDS)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const before = ((await b!.command({ command: 'stats' })).stats as { requests: { responseBytes: number } }).requests.responseBytes
    for (const key of ['lost-1', 'lost-2', 'lost-3']) await a!.command({ command: 'put', key })
    await b!.poll({ command: 'count' }, (reply) => reply.size === HOLDS + 3, 20_000)
    const after = ((await b!.command({ command: 'stats' })).stats as { requests: { responseBytes: number } }).requests.responseBytes
    const received = after - before
    // A bucket pulled whole is ~625 entries of ~330 bytes each; the version list of up to three
    // buckets (~70 bytes an entry), three entries and the digests of the rounds are far less.
    expect(received).toBeGreaterThan(0)
    expect(received).toBeLessThan(180_000)
    console.log(`anti-entropy: b received ${received} bytes of responses for 3 differing holds among ${HOLDS}`)
  }, 90_000)
})
