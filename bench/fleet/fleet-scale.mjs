#!/usr/bin/env node
/**
 * A fleet at scale (issue 19): N fleet nodes on this machine, each the cluster and hold layers
 * of a real gateway node (`packages/gateway/test/fixtures/fleet-node.ts`: `startFleet` with the
 * real holds, cluster, schemas and sync protocols; no HTTP, providers or Postgres), for
 * N = 3, 10, 30, 50. One run per N measures, in this order:
 *
 *  1. formation: spawned in waves of `--wave` (10), each when the one before is ready; first spawn
 *     -> every node sees all N members;
 *  2. idle CPU per node: user + system time from /proc/<pid>/stat over `--idle` seconds, after
 *     `--settle` seconds of quiet, `--idle-repeats` windows (the lowest window is reported
 *     beside the median: the machine is shared);
 *  3. holds: `--holds` holds placed one by one on random nodes (`--rate` a second); for each,
 *     the time until the last other node merged it (p50 / p99 over holds), then a release of
 *     each, the same way; gossip frames and bytes each node received per hold (duplicates
 *     included, from the cluster's own counters);
 *  4. join sync: every node gets the same 10,000 holds (`--sync-holds`); a new node starts and
 *     the time from its process start to holding all of them is measured;
 *  5. failure detection: one node is SIGKILLed; the time until the last other node reported it
 *     gone; then a node is SIGKILLed and restarted within 2 s: the time until every node saw it
 *     back (`member:join` of the new run) and whether each region still has exactly one leader.
 *
 *   node --import tsx bench/fleet/fleet-scale.mjs [--nodes 3,10,30,50] [--holds 40] [--rate 5] [--idle 20]
 *     [--idle-repeats 2] [--settle 10] [--sync-holds 10000] [--wave 10] [--profile <node index>]
 *     [--trace-join] [--render <log of a run>] [--no-readme]
 *
 * `--trace-join`: the joining node of step 4 logs at debug level and is profiled (`--cpu-prof`
 * into bench/results/profiles), and its log from spawn to a second after the sync is printed
 * with times from its first contact: where a slow join spends its time.
 *
 * Every phase has a deadline and every process started here is killed at the end, also when
 * the run fails.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { cpuSeconds, deferred, formatMs as ms, killAll, killFixture as kill, machineBusySeconds, percentile, preciseNow, replaceSection, sleep, startFixture, until } from '../lib/fleet-processes.mjs'
import { freePort } from '@switchboard/test-kit'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const gatewayDir = join(benchDir, '..', 'packages', 'gateway')
const fixture = join(gatewayDir, 'test', 'fixtures', 'fleet-node.ts')

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3,10,30,50' },
    holds: { type: 'string', default: '40' },
    rate: { type: 'string', default: '5' },
    idle: { type: 'string', default: '20' },
    'idle-repeats': { type: 'string', default: '2' },
    settle: { type: 'string', default: '10' },
    'sync-holds': { type: 'string', default: '10000' },
    profile: { type: 'string' },
    render: { type: 'string' },
    wave: { type: 'string', default: '10' },
    'no-readme': { type: 'boolean', default: false },
    'trace-join': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
})
if (values.help) {
  console.log('node --import tsx bench/fleet/fleet-scale.mjs [--nodes 3,10,30,50] [--holds 40] [--rate 5] [--idle 20] [--idle-repeats 2] [--settle 10] [--sync-holds 10000] [--wave 10] [--profile <i>] [--trace-join] [--render <log of a run>] [--no-readme]')
  process.exit(0)
}
const sizes = values.nodes.split(',').map(Number).filter((n) => Number.isInteger(n) && n >= 2 && n <= 60)
const holdCount = Math.min(Math.max(Number(values.holds), 1), 500)
const rate = Math.min(Math.max(Number(values.rate), 0.5), 50)
const idleMs = Math.min(Math.max(Number(values.idle), 1), 300) * 1000
const idleRepeats = Math.min(Math.max(Number(values['idle-repeats']), 1), 10)
const settleMs = Math.min(Math.max(Number(values.settle), 0), 120) * 1000
const syncHolds = Math.min(Math.max(Number(values['sync-holds']), 0), 20_000)
const wave = Math.min(Math.max(Number(values.wave), 1), 60)
const profileIndex = values.profile === undefined ? undefined : Number(values.profile)
const traceJoin = values['trace-join']
const profileArgs = ['--cpu-prof', '--cpu-prof-dir', join(benchDir, 'results', 'profiles')]

const dataRoot = mkdtempSync(join(tmpdir(), 'switchboard-fleet-scale-'))

/** One node process; every JSON line it prints goes to `onLine`. */
const startNode = (config, onLine, nodeArgs = []) => startFixture({ fixture, cwd: gatewayDir, config, onLine, nodeArgs })

const median = (values) => percentile(values, 0.5)
const pct = (value) => (Number.isFinite(value) ? value.toFixed(2) : 'n/a')

async function runFleet(size) {
  const regions = ['eu', 'us', 'ap']
  const ports = []
  for (let index = 0; index <= size; index++) ports.push(await freePort())
  const names = ports.map((_, index) => `node-${String(index).padStart(2, '0')}`)
  // Like a headless Service that lists a few pods: three seeds; the rest is found through members.
  const seeds = ports.slice(0, 3).map((port) => `127.0.0.1:${port}`)
  const configFor = (index, extra = {}) => ({
    nodeId: names[index],
    region: regions[index % regions.length],
    p2pPort: ports[index],
    peers: seeds.filter((seed) => !seed.endsWith(`:${ports[index]}`)),
    secret: 'bench-fleet-secret-0123456789',
    dataDir: join(dataRoot, `${size}-${names[index]}`),
    ...extra,
  })

  /** node id -> node id -> latest join/leave time, as that node reported it. */
  const seen = new Map()
  /** probe key:state -> node id -> when that node merged it. */
  const merges = new Map()
  /** node id -> when it first reported a member joining (it met the fleet). */
  const firstContact = new Map()
  let syncDone
  /** The joiner's log lines (with `--trace-join`). */
  const joinLog = []
  const onLine = (node, line) => {
    const self = node.config.nodeId
    if (traceJoin && self === names[size] && (line.event === 'log' || line.event.startsWith('member:') || line.event === 'merged')) joinLog.push(line)
    if (line.event === 'member:join' || line.event === 'member:leave') {
      if (line.event === 'member:join' && !firstContact.has(self)) firstContact.set(self, line.at)
      if (!seen.has(self)) seen.set(self, new Map())
      seen.get(self).set(line.nodeId, { event: line.event, at: line.at, reason: line.reason })
    } else if (line.event === 'merged') {
      for (const probe of line.probes) {
        if (!merges.has(probe)) merges.set(probe, new Map())
        if (!merges.get(probe).has(self)) merges.get(probe).set(self, line.at)
      }
      if (syncDone !== undefined) syncDone(node, line)
    }
  }
  const live = new Map()
  const start = (index, extraArgs, extraConfig) => {
    const node = startNode(configFor(index, extraConfig), onLine, extraArgs)
    live.set(names[index], node)
    return node
  }
  const joinedAll = (node, members) => {
    const view = seen.get(node.config.nodeId)
    if (view === undefined) return members.length <= 1
    return members.every((name) => name === node.config.nodeId || view.get(name)?.event === 'member:join')
  }

  const result = { size }
  // 1. formation
  const spawnAt = preciseNow()
  const fleetNames = names.slice(0, size)
  // Each process costs ~2 s of CPU to start (Node, tsx, libp2p): 30 or 50 spawned at once on
  // two shared cores starve each other for minutes (one such run had nodes still starting after
  // 150 s, at a load average of 70). So they start in waves of `--wave`, each when the one
  // before is ready, as a rolling deployment would; deadlines grow with N.
  for (let first = 0; first < size; first += wave) {
    for (let index = first; index < Math.min(size, first + wave); index++) start(index, profileIndex === index ? profileArgs : [])
    await until(() => [...live.values()].every((node) => node.ready), 60_000 + wave * 6_000, 'every node ready').catch((error) => {
      throw new Error(`${error.message}: ${[...live.values()].filter((node) => !node.ready).map((node) => `${node.config.nodeId} (last log lines: ${JSON.stringify(node.lastLogs ?? [])}): ${node.stderr.slice(-300)}`).join('\n')}`)
    })
  }
  await until(() => [...live.values()].every((node) => joinedAll(node, fleetNames)), 60_000 + size * 2_000, 'every node seeing every member').catch((error) => {
    const counts = [...live.values()].filter((node) => !joinedAll(node, fleetNames)).map((node) => `${node.config.nodeId} lacks ${fleetNames.filter((name) => name !== node.config.nodeId && seen.get(node.config.nodeId)?.get(name)?.event !== 'member:join').map((name) => `${name} (${JSON.stringify(seen.get(node.config.nodeId)?.get(name))})`).join(', ')}`)
    throw new Error(`${error.message} (members seen: ${counts.join(' ')})`)
  })
  result.formedMs = preciseNow() - spawnAt
  const readyTimes = [...live.values()].map((node) => performance.timeOrigin + node.readyAt - node.spawnedAt)
  result.readyMs = { median: median(readyTimes), max: Math.max(...readyTimes) }
  console.log(`  processes ready (spawn -> ready line) median ${ms(result.readyMs.median)} ms, slowest ${ms(result.readyMs.max)} ms; every member seen by every node ${ms(result.formedMs)} ms after the first spawn`)

  // 2. idle CPU
  await sleep(settleMs)
  const windows = []
  for (let repeat = 0; repeat < idleRepeats; repeat++) {
    // The profiled node pays for its sampler (~10 % of a core): it is left out of the idle figures.
    const nodes = [...live.values()].filter((node) => node.config.nodeId !== names[profileIndex])
    const before = nodes.map((node) => cpuSeconds(node.pid))
    const machineBefore = machineBusySeconds()
    const startedAt = performance.now()
    await sleep(idleMs)
    const seconds = (performance.now() - startedAt) / 1000
    const perNode = nodes.map((node, index) => ((cpuSeconds(node.pid) - before[index]) / seconds) * 100)
    const fleetShare = perNode.reduce((sum, value) => sum + value, 0)
    const busiest = nodes.map((node, index) => [node.config.nodeId, perNode[index]]).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([name, share]) => `${name} ${pct(share)}`)
    windows.push({ median: median(perNode), max: Math.max(...perNode), mean: fleetShare / perNode.length, machine: ((machineBusySeconds() - machineBefore) / seconds) * 100, fleet: fleetShare, busiest })
  }
  result.idle = windows
  result.loadavg = loadavg()[0]
  console.log(`  busiest nodes per idle window: ${windows.map((window) => window.busiest.join(', ')).join(' | ')}`)
  console.log(`  formed in ${Math.round(result.formedMs)} ms; idle CPU per node (% of a core), median/max per window: ${windows.map((window) => `${pct(window.median)}/${pct(window.max)}`).join(', ')}; machine busy ${windows.map((window) => Math.round(window.machine)).join(', ')} % of ${cpus().length * 100} %`)

  // 3. holds and releases
  const nodes = () => [...live.values()]
  const statsOf = async () => Promise.all(nodes().map(async (node) => (await node.command({ command: 'stats' })).stats))
  const statsBefore = await statsOf()
  let missed = 0
  const visible = async (state) => {
    const times = []
    for (let index = 0; index < holdCount; index++) {
      const key = `probe-${size}-${index}`
      const origin = nodes()[Math.floor(Math.random() * size)]
      const sentAt = preciseNow()
      await origin.command({ command: state === 'held' ? 'hold' : 'release', key })
      const others = nodes().filter((node) => node !== origin).map((node) => node.config.nodeId)
      const probe = `${key}:${state}`
      // A change not everywhere within 20 s counts as missed (p99 is then over the deadline), and
      // which nodes lacked it, and where it came from, is printed: a failure is a figure too.
      const arrived = await until(() => others.every((name) => merges.get(probe)?.has(name)), 20_000, `${probe} on every node`).then(() => true, () => false)
      if (!arrived) {
        const lacking = others.filter((name) => !merges.get(probe)?.has(name))
        console.log(`  ${probe} from ${origin.config.nodeId} missed after 20 s by ${lacking.join(', ')}`)
        missed++
        times.push(Number.POSITIVE_INFINITY)
      } else times.push(Math.max(...others.map((name) => merges.get(probe).get(name))) - sentAt)
      await sleep(1000 / rate)
    }
    return times
  }
  const held = await visible('held')
  const released = await visible('released')
  result.missed = missed
  const statsAfter = await statsOf()
  result.hold = { p50: percentile(held, 0.5), p99: percentile(held, 0.99) }
  result.release = { p50: percentile(released, 0.5), p99: percentile(released, 0.99) }
  // Per node, per change (holds + releases): gossip frames and bytes that node received on the holds topic.
  const changes = holdCount * 2
  const perNode = statsAfter.map((after, index) => {
    const before = statsBefore[index]
    return { frames: (after.gossip.frames - before.gossip.frames) / changes, bytes: (after.gossip.bytes - before.gossip.bytes) / changes, delivered: (after.topics['/switchboard/1/holds'].received - before.topics['/switchboard/1/holds'].received) / changes }
  })
  console.log(`  hold on every node p50/p99 ${ms(result.hold.p50)}/${ms(result.hold.p99)} ms; release ${ms(result.release.p50)}/${ms(result.release.p99)} ms`)
  result.perHold = { frames: median(perNode.map((node) => node.frames)), bytes: median(perNode.map((node) => node.bytes)), delivered: median(perNode.map((node) => node.delivered)) }

  // 4. join sync of `syncHolds` holds
  if (syncHolds > 0) {
    await Promise.all(nodes().map((node) => node.command({ command: 'seed', count: syncHolds }, 60_000)))
    await sleep(2_000)
    const { promise, resolve } = deferred()
    syncDone = (node, line) => {
      if (node.config.nodeId === names[size] && line.size >= syncHolds) resolve(line.at)
    }
    const joiner = traceJoin ? start(size, profileArgs, { logLevel: 'debug' }) : start(size)
    const syncedAt = await Promise.race([promise, sleep(60_000).then(() => Number.NaN)])
    syncDone = undefined
    if (traceJoin) {
      const contact = firstContact.get(names[size]) ?? joiner.spawnedAt
      console.log(`  the joiner's log, ms from its first contact (spawned at ${ms(joiner.spawnedAt - contact)}):`)
      for (const line of joinLog.filter((line) => !(line.at > syncedAt + 1_000)).slice(0, 400)) {
        const what = line.event === 'log' ? `${line.msg} ${line.fields ?? ''}` : line.event === 'merged' ? `merged ${line.n} (set ${line.size})` : `${line.event} ${line.nodeId}`
        console.log(`    ${ms(line.at - contact).padStart(7)}  ${what}`)
      }
    }
    result.joinSyncMs = syncedAt - joiner.spawnedAt
    result.joinSyncFromContactMs = syncedAt - (firstContact.get(names[size]) ?? Number.NaN)
    console.log(`  join sync of ${syncHolds} holds: ${ms(result.joinSyncMs)} ms from the joiner's spawn, ${ms(result.joinSyncFromContactMs)} ms from its first contact with the fleet`)
    await until(() => joiner.ready, 30_000, 'the joiner ready').catch((error) => {
      console.log(`join: ${error.message}; result so far ${JSON.stringify(result)}; joiner stderr: ${joiner.stderr}`)
    })
    await kill(joiner, 'SIGTERM')
    live.delete(names[size])
    await sleep(3_000)
  }

  // 5. failure detection, then a kill and a restart within 2 s
  const victim = live.get(names[size - 1])
  const watchers = nodes().filter((node) => node !== victim).map((node) => node.config.nodeId)
  const killAt = preciseNow()
  await kill(victim)
  live.delete(victim.config.nodeId)
  const gone = (name) => {
    const entry = seen.get(name)?.get(victim.config.nodeId)
    return entry?.event === 'member:leave' && entry.at > killAt
  }
  await until(() => watchers.every(gone), 60_000, 'every node seeing the kill').catch(() => {})
  const detections = watchers.filter(gone).map((name) => seen.get(name).get(victim.config.nodeId).at - killAt)
  result.detect = { p50: median(detections), max: detections.length === watchers.length ? Math.max(...detections) : Number.NaN, reasons: [...new Set(watchers.filter(gone).map((name) => seen.get(name).get(victim.config.nodeId).reason))] }

  console.log(`  kill detected by every node: ${ms(result.detect.max)} ms (${result.detect.reasons.join(', ')})`)
  const bounced = live.get(names[1])
  const bounceWatchers = nodes().filter((node) => node !== bounced).map((node) => node.config.nodeId)
  const bounceAt = preciseNow()
  await kill(bounced)
  live.delete(bounced.config.nodeId)
  await sleep(1_000)
  const back = start(1)
  const rejoined = (name) => {
    const entry = seen.get(name)?.get(bounced.config.nodeId)
    return entry?.event === 'member:join' && entry.at > bounceAt
  }
  await until(() => bounceWatchers.every(rejoined), 60_000, 'every node seeing the restart').catch(() => {})
  result.restart = { seenMs: bounceWatchers.every(rejoined) ? Math.max(...bounceWatchers.map((name) => seen.get(name).get(bounced.config.nodeId).at)) - bounceAt : Number.NaN }
  await until(() => back.ready, 30_000, 'the restarted node ready')
  await sleep(3_000)
  const views = await Promise.all(nodes().map((node) => node.command({ command: 'view' })))
  const expected = {}
  for (const name of fleetNames.filter((name) => name !== victim.config.nodeId)) {
    const region = regions[names.indexOf(name) % regions.length]
    if (expected[region] === undefined || name < expected[region]) expected[region] = name
  }
  result.leadersAgree = views.every((view) => JSON.stringify(Object.entries(view.leaders).sort()) === JSON.stringify(Object.entries(expected).sort()))

  await Promise.all(nodes().map((node) => kill(node, profileIndex === undefined ? 'SIGKILL' : 'SIGTERM')))
  return result
}

/** The bench/README.md table of `results` (one per N). */
function render(results) {
  const seconds = (value) => (Number.isFinite(value) ? (value / 1000).toFixed(2) : 'n/a')
  const header = [
    `| nodes | processes ready, median / slowest (s) | formed (s) | idle CPU per node, % of a core: median (max), per window | machine busy during idle windows | hold on every node p50 / p99 (ms) | release on every node p50 / p99 (ms) | gossip copies / bytes received per change per node | join sync of ${syncHolds} holds: from first contact (from spawn) (s) | kill detected by every node (s) | restart seen by every node (s) | one leader per region after churn |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ]
  const rows = results.map((result) => {
    const idle = result.idle.map((window) => `${pct(window.median)} (${pct(window.max)})`).join(', ')
    const machine = result.idle.map((window) => `${Math.round(window.machine)} %`).join(', ')
    return `| ${result.size} | ${seconds(result.readyMs?.median)} / ${seconds(result.readyMs?.max)} | ${seconds(result.formedMs)} | ${idle} | ${machine} of 200 % | ${ms(result.hold.p50)} / ${ms(result.hold.p99)}${result.missed ? ` (${result.missed} of ${2 * holdCount} changes missed by some node after 20 s)` : ''} | ${ms(result.release.p50)} / ${ms(result.release.p99)} | ${result.perHold.frames.toFixed(2)} / ${Math.round(result.perHold.bytes)} | ${seconds(result.joinSyncFromContactMs)} (${seconds(result.joinSyncMs)}) | ${seconds(result.detect.max)} (${result.detect.reasons.join(', ')}) | ${seconds(result.restart.seenMs)} | ${result.leadersAgree ? 'yes' : 'NO'} |`
  })
  const conditions = `Run ${new Date().toISOString().slice(0, 16)} UTC on ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}; 1-minute load average at the end of the idle windows: ${results.map((result) => `${result.size} nodes ${result.loadavg.toFixed(1)}`).join(', ')}; ${holdCount} holds at ${rate}/s.`
  return [...header, ...rows, '', conditions].join('\n')
}

async function main() {
  const results = []
  if (values.render !== undefined) {
    // Re-renders the table from a run's log (its one-line JSON results), e.g. after a table change.
    for (const line of readFileSync(values.render, 'utf8').split('\n')) if (line.startsWith('{"size":')) results.push(JSON.parse(line))
  } else {
    for (const size of sizes) {
      console.log(`fleet of ${size} ...`)
      const result = await runFleet(size)
      console.log(JSON.stringify(result))
      results.push(result)
    }
  }
  const table = render(results)
  console.log(`\n${table}`)
  if (!values['no-readme']) {
    replaceSection(join(benchDir, 'README.md'), 'fleet-scale', table)
    console.log('bench/README.md updated')
  }
}

const cleanup = async () => {
  await killAll()
  rmSync(dataRoot, { recursive: true, force: true })
}
process.on('SIGINT', () => {
  void cleanup().finally(() => process.exit(130))
})
try {
  await main()
} finally {
  await cleanup()
}
