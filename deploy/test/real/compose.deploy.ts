/**
 * `npm run test:deploy`: docker-compose.yml run for real (issue 37). On a Docker engine
 * (installed from Debian's packages and started here when there is none), with stand-ins
 * for the two base images when no registry answers, the image built from the unchanged
 * deploy/Dockerfile, the fleet is brought up and broken the ways a user would: a chat
 * through every node, a revoked key held fleet-wide, a crashed node, a crashed Postgres, a
 * node cut off the network for 30 s, `down`/`up`, a node started while Postgres is down; and
 * the README's `docker run`; and the image itself is lean (issue 38: no embedded Postgres, no
 * tsx, its size beside its base's, a node's memory). Traffic from the host goes only to ports published on
 * 127.0.0.1. Everything it made is removed at the end, the engine it started stopped.
 *
 * Not part of `npm test` (a file of its own config, deploy/test/real/vitest.config.ts): it
 * needs root and minutes, and changes the host's networking while it runs.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { root, shutdownBoundSeconds } from '../repo.ts'
import { startEngine, type Engine } from './engine.ts'
import { ADMIN_TOKEN, chat, Fleet, heldKeys, http, NODE_PORTS, NODES } from './fleet.ts'
import { imageMegabytes, isStandIn, NOT_SHIPPED, pathsNamed, processMemory } from './image.ts'
import { ensureBaseImages, type BaseImages } from './stand-ins.ts'
import { run, say, sleep, waitFor } from './shell.ts'

const PROJECT = 'sbdeploy'
const IMAGE = 'switchboard:local'
const REVOKED = 'demo-revoked'
const SERVICES = ['postgres', 'simulator', ...NODES]
const README_PORT = 8083
const BASE_IMAGE = 'node:22-bookworm-slim'
/**
 * Issue 38's target for the image. Measured 139 MB (Node's binary 125 MB of it, ours 9 MB): the
 * runtime stage copies Node out of its base rather than inheriting the base (304 MB as a
 * stand-in), so the bound does not move with the base image.
 */
const IMAGE_BOUND_MB = 200

const startedAt = Date.now()
/** What the closing note of issue 37 asks for, filled in as the steps run. */
const figures: Record<string, string> = {}
let engine: Engine | undefined
let fleet: Fleet | undefined
let bases: BaseImages | undefined

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`

/** Sends chats to a node until it holds the revoked key (the balancer picks it sooner or later). */
async function holdRevokedKey(port: number): Promise<void> {
  await waitFor(`node on ${port} to hold ${REVOKED}`, async () => {
    if ((await heldKeys(port))?.includes(REVOKED)) return true
    const answer = await chat(port)
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    return undefined
  }, 60_000, 100)
}

/** Waits until every node holds (or none holds) the revoked key; returns the seconds it took. */
async function everyNode(holding: boolean, timeoutMs: number, nodes = NODES): Promise<number> {
  const started = Date.now()
  await waitFor(`${nodes.join(', ')} to ${holding ? 'hold' : 'release'} ${REVOKED}`, async () => {
    const held = await Promise.all(nodes.map((node) => heldKeys(NODE_PORTS[node] ?? 0)))
    return held.every((keys) => keys !== undefined && keys.includes(REVOKED) === holding) ? true : undefined
  }, timeoutMs, 250)
  return (Date.now() - started) / 1000
}

beforeAll(async () => {
  engine = await startEngine()
  figures['engine'] = `${engine.ours ? 'started by the test' : 'already running'}; ${engine.composeVersion}${engine.installSeconds > 0 ? `; packages installed in ${engine.installSeconds.toFixed(0)} s` : ''}`
  bases = await ensureBaseImages()
  for (const note of bases.notes) say(note)
  if (bases.made.length > 0) figures['base images'] = `${bases.seconds.toFixed(0)} s (${bases.notes.map((note) => note.split(':')[0] + (note.includes('STAND-IN') ? ' stand-in' : '')).join(', ')})`
  say(`building ${IMAGE} from the unchanged deploy/Dockerfile (legacy builder, as Engine 20.10 has it)`)
  const building = Date.now()
  await run('docker', ['build', '-f', 'deploy/Dockerfile', '-t', IMAGE, '.'], { cwd: root, env: { DOCKER_BUILDKIT: '0' }, timeoutMs: 600_000 })
  figures['image build'] = seconds(building)
  const [size, base] = [await imageMegabytes(IMAGE), await imageMegabytes(BASE_IMAGE)]
  figures['image size'] = `${size.toFixed(0)} MB (its base ${BASE_IMAGE}${(await isStandIn(BASE_IMAGE)) ? ', a stand-in,' : ''} ${base.toFixed(0)} MB; the runtime stage copies node out of it, it does not inherit it)`
  fleet = new Fleet(engine, PROJECT)
  say(`${engine.compose.join(' ')} -p ${PROJECT} up -d`)
  const up = Date.now()
  await fleet.compose(['up', '-d', '--no-build'])
  await fleet.healthy(SERVICES, 120_000)
  figures['up -> healthy'] = seconds(up)
}, 1_200_000)

afterAll(async () => {
  try {
    await run('docker', ['rm', '-f', 'sbdeploy-readme'], { allowFail: true })
    if (fleet) await fleet.down({ volumes: true }).catch((error: Error) => say(`down failed: ${error.message}`))
    if (engine && !engine.ours) {
      // Someone else's engine: remove only what this test made.
      await run('docker', ['rmi', '-f', IMAGE, ...(bases?.made ?? [])], { allowFail: true })
      await run('docker', ['image', 'prune', '-f', '--filter', 'dangling=true'], { allowFail: true })
    }
  } finally {
    await engine?.stop()
    figures['test:deploy total'] = seconds(startedAt)
    say('figures (issue 37):')
    for (const [name, value] of Object.entries(figures)) say(`  ${name}: ${value}`)
  }
}, 300_000)

describe('the image', () => {
  it(`holds no embedded Postgres, no tsx, no build tools, and stays under ${IMAGE_BOUND_MB} MB`, async () => {
    expect(await pathsNamed(IMAGE, NOT_SHIPPED)).toEqual([])
    expect(await imageMegabytes(IMAGE)).toBeLessThan(IMAGE_BOUND_MB)
  }, 120_000)

  it('says to set DATABASE_URL when started without one (it has no embedded Postgres)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'sb-no-database-'))
    writeFileSync(join(folder, 'config.json'), JSON.stringify({ providers: {} }))
    const ran = await run('docker', ['run', '--rm', '-v', `${folder}/config.json:/etc/switchboard/config.json:ro`, '-e', 'SWITCHBOARD_INSECURE=1', IMAGE], { allowFail: true, timeoutMs: 60_000 })
    expect(ran.code, ran.stdout + ran.stderr).not.toBe(0)
    expect(ran.stderr).toContain('set DATABASE_URL')
  }, 90_000)
})

describe('docker-compose.yml on a real Docker engine', () => {
  it('serves a chat through every node with the gateway key (host -> 127.0.0.1 only)', async () => {
    for (const node of NODES) {
      const answer = await chat(NODE_PORTS[node] ?? 0)
      expect(answer.status, `${node}: ${JSON.stringify(answer.body)}`).toBe(200)
      expect(answer.body.extra_fields?.provider).toBe('openai')
    }
    const memory = await fleet!.memory()
    figures['memory per node (docker stats)'] = NODES.map((node) => `${node} ${memory[node] ?? '?'}`).join(', ')
    const resident = await Promise.all(NODES.map(async (node) => ({ node, ...(await processMemory(await fleet!.container(node))) })))
    figures['idle node VmRSS (anonymous + file-backed)'] = resident.map((entry) => `${entry.node} ${entry.rss.toFixed(0)} MiB (${entry.anon.toFixed(0)} + ${entry.file.toFixed(0)})`).join(', ')
  }, 60_000)

  it('holds the revoked key on all three nodes', async () => {
    await holdRevokedKey(NODE_PORTS['node-1']!)
    await everyNode(true, 15_000)
  }, 90_000)

  it("runs the README's `docker run` example", async () => {
    // deploy/README.md, "The image on its own", with a config.json naming a gateway key and
    // a provider key, against a database of its own on the compose Postgres.
    const folder = mkdtempSync(join(tmpdir(), 'sb-readme-'))
    writeFileSync(
      join(folder, 'config.json'),
      JSON.stringify({
        providers: { openai: { keys: [{ name: 'prod-1', value: 'env.OPENAI_KEY_1', models: ['*'], weight: 1 }], network_config: { base_url: 'http://simulator:8090' } } },
        gateway_keys: [{ name: 'my-app', value: 'env.MY_APP_GATEWAY_KEY' }],
      }),
    )
    await fleet!.compose(['exec', '-T', 'postgres', 'psql', '-q', '-U', 'switchboard', '-d', 'switchboard', '-c', 'CREATE DATABASE readme'])
    const env = { SWITCHBOARD_ADMIN_TOKENS: 'readme-admin-token-0123:update', MY_APP_GATEWAY_KEY: 'readme-gateway-key-0123', OPENAI_KEY_1: 'sk-readme-1111' }
    await run('docker', ['run', '-d', '--name', 'sbdeploy-readme', '--network', fleet!.network, '-p', `127.0.0.1:${README_PORT}:8080`,
      '-v', `${folder}/config.json:/etc/switchboard/config.json:ro`,
      '-e', 'SWITCHBOARD_ADMIN_TOKENS', '-e', 'MY_APP_GATEWAY_KEY', '-e', 'OPENAI_KEY_1',
      '-e', 'DATABASE_URL=postgres://switchboard:switchboard@postgres:5432/readme', IMAGE], { env })
    try {
      await waitFor('the docker run node to answer /health with 200', async () => ((await http(README_PORT, '/health')).status === 200 ? true : undefined), 60_000)
      const answer = await chat(README_PORT, env.MY_APP_GATEWAY_KEY)
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect((await http(README_PORT, '/api/cluster', { token: 'readme-admin-token-0123' })).status).toBe(200)
    } catch (error) {
      say((await run('docker', ['logs', '--tail', '40', 'sbdeploy-readme'], { allowFail: true })).stderr)
      throw error
    } finally {
      await run('docker', ['rm', '-f', 'sbdeploy-readme'], { allowFail: true })
    }
  }, 120_000)

  it('brings a crashed node back serving, with its holds', async () => {
    const how = await fleet!.crash('node-2')
    const crashed = Date.now()
    say(`crashed node-2: ${how}`)
    await waitFor('node-2 to serve again', async () => ((await chat(NODE_PORTS['node-2']!)).status === 200 ? true : undefined), 90_000, 200)
    figures['crash -> serving'] = `${seconds(crashed)} (node-2, ${how.split(':')[0]})`
    await everyNode(true, 15_000, ['node-2'])
    await fleet!.healthy(['node-2'], 60_000)
  }, 150_000)

  it('keeps serving through a Postgres crash and resumes snapshots when it is back', async () => {
    const how = await fleet!.crash('postgres')
    say(`crashed postgres: ${how}`)
    const during = await chat(NODE_PORTS['node-1']!)
    expect(during.status, JSON.stringify(during.body)).toBe(200)
    await fleet!.healthy(['postgres'], 60_000)
    const back = Date.now()
    await waitFor('a hold snapshot written after Postgres came back', async () => {
      const views = await Promise.all(NODES.map((node) => http(NODE_PORTS[node]!, '/api/cluster', { token: ADMIN_TOKEN })))
      return views.some((view) => view.status === 200 && view.body.last_snapshot && Date.parse(view.body.last_snapshot.taken_at) > back) ? true : undefined
    }, 90_000, 1_000)
    figures['Postgres back -> next snapshot'] = seconds(back)
    await fleet!.healthy(NODES, 60_000)
  }, 200_000)

  it('converges a node cut off the network for 30 s', async () => {
    const node3 = await fleet!.container('node-3')
    await run('docker', ['network', 'disconnect', fleet!.network, node3])
    const cut = Date.now()
    say('node-3 cut off the compose network; releasing the held key on node-1 meanwhile')
    const cleared = await http(NODE_PORTS['node-1']!, '/api/adaptive-routing/conditions/clear', { token: ADMIN_TOKEN, body: {} })
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200)
    await everyNode(false, 15_000, ['node-1', 'node-2'])
    await sleep(Math.max(0, 30_000 - (Date.now() - cut)))
    await run('docker', ['network', 'connect', '--alias', 'node-3', fleet!.network, node3])
    const joined = Date.now()
    // node-3 missed the release: it must learn it, and the three must see each other again.
    await everyNode(false, 90_000)
    await waitFor('every node to list the other two as members', async () => {
      const views = await Promise.all(NODES.map((node) => http(NODE_PORTS[node]!, '/api/cluster', { token: ADMIN_TOKEN })))
      return views.every((view) => view.status === 200 && (view.body.members as unknown[]).length >= 2) ? true : undefined
    }, 90_000, 1_000)
    figures['reconnect -> converged'] = seconds(joined)
  }, 240_000)

  it('restores the holds after down and up', async () => {
    await holdRevokedKey(NODE_PORTS['node-1']!)
    await everyNode(true, 15_000)
    // The nodes first, timed: SIGTERM to exit is what the grace periods must cover.
    const stopping = Date.now()
    await fleet!.compose(['stop', '-t', '40', ...NODES], { timeoutMs: 120_000 })
    const stoppedInMs = Date.now() - stopping
    figures['stop of the three nodes (SIGTERM -> exited)'] = seconds(stopping)
    const waits: string[] = []
    for (const node of NODES) {
      const lines = (await fleet!.logs([node], 12)).trim()
      say(`${node} stopping:\n${lines}`)
      waits.push(...lines.split('\n').filter((line) => /still waiting on|gave up on|drain bound|did not land/.test(line)))
    }
    // Regression: node-3, cut off from Postgres earlier, waited on its pool (then, in a CI run, on
    // its last hold snapshot) until the gateway's hard bound. A stop that reaches the bound means
    // some step hung; the lines quoted say which.
    expect(stoppedInMs, `a node waited until the shutdown bound:\n${waits.join('\n')}`).toBeLessThan((shutdownBoundSeconds() - 4) * 1000)
    const down = Date.now()
    await fleet!.down({ volumes: false })
    figures['down (Postgres, simulator, network)'] = seconds(down)
    const up = Date.now()
    await fleet!.compose(['up', '-d', '--no-build'])
    await fleet!.healthy(SERVICES, 120_000)
    figures['up -> healthy (again, volumes kept)'] = seconds(up)
    // No traffic yet: the holds come from Postgres (the leaders' last snapshots) and peers.
    await everyNode(true, 30_000)
    // Regression (issue 37): an image VOLUME left an anonymous volume at every down/up.
    const volumes = (await run('docker', ['volume', 'ls', '-q'])).stdout.trim().split('\n').filter((name) => name !== '')
    expect(volumes.filter((name) => /^[0-9a-f]{64}$/.test(name)), 'anonymous volumes').toEqual([])
  }, 300_000)

  it('does not report ready a node started while Postgres is down until it serves', async (context) => {
    if ((await http(NODE_PORTS['node-1']!, '/health/live')).status === 404) {
      const note = 'skipped: the gateway has no GET /health/live yet, so /health is not a readiness check (issue 37 item 5, the readiness branch, adds both)'
      say(note)
      context.skip(note)
    }
    await fleet!.compose(['stop', 'postgres'])
    await fleet!.compose(['rm', '-f', '-s', 'node-3'])
    await fleet!.compose(['up', '-d', '--no-deps', 'node-3'])
    const samples: string[] = []
    const until = Date.now() + 30_000
    let sawStarting = false
    while (Date.now() < until) {
      const health = await http(NODE_PORTS['node-3']!, '/health', { timeoutMs: 2_000 })
      if (health.status === 0) {
        await sleep(200)
        continue
      }
      const answer = await chat(NODE_PORTS['node-3']!)
      samples.push(`${health.status} ${health.body?.status} (worker ${health.worker ?? '-'}) -> chat ${answer.status} ${answer.body?.error?.code ?? ''} (worker ${answer.worker ?? '-'})`)
      if (health.body?.status === 'starting') sawStarting = true
      // While it cannot serve (no gateway keys yet), /health must not say 200.
      if (health.status === 200) expect(answer.body?.error?.code, samples.join('\n')).not.toBe('gateway_key_required')
      if (health.status === 200) expect(answer.status, samples.join('\n')).not.toBe(503)
      await sleep(300)
    }
    say(`node-3 started with Postgres down: ${sawStarting ? 'reported "starting" first' : 'never reported "starting" (it had its keys from config.json or a peer)'}; last: ${samples.at(-1)}`)
    await fleet!.compose(['start', 'postgres'])
    await fleet!.healthy(SERVICES, 120_000)
  }, 240_000)
})
