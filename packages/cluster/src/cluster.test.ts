/** One real node in this process: the refusals of `createCluster` and of its topics. */
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createCluster } from './index.ts'
import type { Cluster, ClusterInit } from './index.ts'

let dataRoot = ''
let cluster: Cluster
const init = (overrides: Partial<ClusterInit> = {}): ClusterInit => ({
  nodeId: 'solo',
  region: 'eu',
  listen: { host: '127.0.0.1', port: 0 },
  peers: [],
  fleetSecret: 'secret',
  dataDir: join(dataRoot, 'solo'),
  ...overrides,
})

beforeAll(async () => {
  dataRoot = await mkdtemp(join(tmpdir(), 'cluster-solo-'))
  cluster = await createCluster(init())
})
afterAll(async () => {
  await cluster?.stop()
  await rm(dataRoot, { recursive: true, force: true })
})

describe('a single node', () => {
  it('is its own only member and its region leader', () => {
    expect(cluster.members()).toEqual([expect.objectContaining({ nodeId: 'solo', region: 'eu', self: true, peerId: cluster.peerId })])
    expect(cluster.leader()?.self).toBe(true)
    expect(cluster.leader('us')).toBeUndefined()
    expect(cluster.addresses[0]).toMatch(new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${cluster.peerId}$`))
  })

  it('refuses a bad init without starting anything', async () => {
    await expect(createCluster(init({ fleetSecret: '' }))).rejects.toMatchObject({ code: 'invalid_init' })
    await expect(createCluster(init({ peers: ['/nonsense'] }))).rejects.toMatchObject({ code: 'invalid_init' })
    await expect(createCluster(init({ timing: { heartbeatMs: -1 } }))).rejects.toMatchObject({ code: 'invalid_init' })
  })

  it('says listen_failed when its port is taken', async () => {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    const port = typeof address === 'object' && address !== null ? address.port : 0
    await expect(createCluster(init({ dataDir: join(dataRoot, 'taken'), listen: { host: '127.0.0.1', port } }))).rejects.toMatchObject({ code: 'listen_failed' })
    await new Promise((resolve) => server.close(resolve))
  })

  it('refuses bad topics and bad messages at publish time', async () => {
    const schema = z.object({ text: z.string() })
    const topic = cluster.topic('solo/checks', schema, { scope: 'region', maxBytes: 100 })
    expect(topic.name).toBe('/switchboard/1/solo/checks/region/eu')
    expect(() => cluster.topic('solo/checks', schema, { scope: 'region' })).toThrow(expect.objectContaining({ code: 'topic_exists' }))
    expect(() => cluster.topic('bad name', schema, { scope: 'fleet' })).toThrow(expect.objectContaining({ code: 'invalid_topic' }))
    expect(() => cluster.topic('_members', schema, { scope: 'fleet' })).toThrow(expect.objectContaining({ code: 'invalid_topic' }))
    expect(() => cluster.topic('huge', schema, { scope: 'fleet', maxBytes: 2 ** 30 })).toThrow(expect.objectContaining({ code: 'invalid_topic' }))
    await expect(topic.publish({ text: 7 } as unknown as { text: string })).rejects.toMatchObject({ code: 'message_invalid' })
    await expect(topic.publish({ text: 'x'.repeat(200) })).rejects.toMatchObject({ code: 'message_oversized' })
    await topic.publish({ text: 'fits' })
    expect(cluster.stats().topics[topic.name]).toMatchObject({ published: 1 })
  })

  it('answers request errors with codes', async () => {
    await expect(cluster.request('not-a-peer-id', 'x', {}, z.object({}))).rejects.toMatchObject({ code: 'peer_unreachable' })
    await expect(cluster.request(cluster.peerId, 'bad protocol', {}, z.object({}))).rejects.toMatchObject({ code: 'invalid_init' })
  })

  it('keeps its peer id across restarts and stops idempotently', async () => {
    const dataDir = join(dataRoot, 'restart')
    const first = await createCluster(init({ dataDir }))
    await Promise.all([first.stop(), first.stop()])
    const second = await createCluster(init({ dataDir }))
    expect(second.peerId).toBe(first.peerId)
    await second.stop()
    expect(() => second.topic('late', z.string(), { scope: 'fleet' })).toThrow(expect.objectContaining({ code: 'stopped' }))
  })
})
