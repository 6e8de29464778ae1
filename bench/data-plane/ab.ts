/**
 * Paired A/B (or A/B/C) of Switchboard checkouts (or configs of one) on one simulator:
 * both gateways run side by side and take turns under the same load, window after
 * window, so whatever else the machine is doing weighs on both alike. Reports CPU ms
 * per request of each, per window and the median of the windows.
 *
 *   node --import tsx bench/data-plane/ab.ts --a <checkout> --b <checkout> [--c <checkout>] [--rounds 6] [--window 5]
 *        [--connections 50] [--config-a file.json] [--config-b file.json] [--profile] [--stream] [--fresh] [--warmup 3]
 *        [--node-flags=--trace-gc] [--node-flags-b=--max-semi-space-size=32]
 *        (node flags for both gateways / for B only; their output is in results/ab/A.log, B.log;
 *        --node-flags-b=--env-file=f.env gives B environment variables of its own; --node-flags-a for A; --node-flags-c, --config-c for C)
 *        [--postgres-nice 10] [--postgres-idle] (the server at a lower priority / SCHED_IDLE)
 *        [--postgres-cpus 1] [--gateway-cpus 0] (taskset: the server's and the gateways' CPUs)
 *        [--upstream simulator|mock] (the upstream: the simulator, or frontier-mock.mjs, a bare node:http
 *        OpenAI mock that leaves more of a core to the load generator)
 *
 * Pinned, as bench/README.md's tracing run is: `taskset -c 0 npm run bench:ab -- --upstream mock
 * --gateway-cpus 1 --postgres-cpus 0 ...` (the bench, its load generator and the upstream inherit
 * CPU 0; each gateway is moved to CPU 1 as it starts), so a gateway has a core to itself.
 *
 * Each window also prints the simulator's and the load generator's CPU per request, how busy
 * the machine was, and per 1,000 requests the gateway's read and write syscalls and its
 * voluntary/involuntary context switches (from /proc).
 *
 * A checkout is a directory with packages/gateway/bin/switchboard.js (default: this one).
 * A config file is merged over the bench's one openai key (e.g. {"request_log":{"enabled":true}}).
 * Each gateway gets its own database on one private embedded PostgreSQL.
 * --profile runs both under `node --cpu-prof` (bench/results/ab/profile-A, profile-B; written
 * when they stop) and prints each side's request count, to divide a profile's times by.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { join, resolve, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { freePort, startPrivateServer } from '@switchboard/test-kit'
import { measure } from '../lib/load.mjs'
import { logTail, startService, stopAll, stopService, waitUntilReady, killAllNow } from '../lib/processes.mjs'
import { startSimulator, UPSTREAM_KEY } from '../lib/targets.mjs'
import { clockTicks, postgresCpuMs, readStatFile } from '../lib/processes.mjs'
import { readdirSync } from 'node:fs'
import os from 'node:os'
import { execFileSync } from 'node:child_process'

/** Read and write syscalls and context switches of one process, from /proc. */
function syscalls(pid: number): { reads: number; writes: number; voluntary: number; involuntary: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8')
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (text: string, name: string) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(text)?.[1] ?? NaN)
  return { reads: field(io, 'syscr'), writes: field(io, 'syscw'), voluntary: field(status, 'voluntary_ctxt_switches'), involuntary: field(status, 'nonvoluntary_ctxt_switches') }
}

/** User and system CPU ms of one process (the gateway's node process itself). */
function userSystemMs(pid: number): { user: number; system: number } {
  const stat = readStatFile(`/proc/${pid}/stat`, pid)
  return { user: (stat.user * 1000) / clockTicks, system: (stat.system * 1000) / clockTicks }
}

/** CPU ms of each thread of one process, summed by thread name (main thread, V8 workers, libuv pool). */
function threadCpuMs(pid: number): Map<string, number> {
  const byName = new Map<string, number>()
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readStatFile(`/proc/${pid}/task/${task}/stat`, Number(task))
      const name = stat.pid === pid ? 'main' : stat.comm.replace(/\d+$/, '')
      byName.set(name, (byName.get(name) ?? 0) + (stat.ticks * 1000) / clockTicks)
    } catch { /* gone */ }
  }
  return byName
}

/** frontier-mock.mjs (answers at once): an upstream that costs its core a fraction of the simulator's CPU. */
async function startMock(): Promise<{ service: ReturnType<typeof startService>; origin: string }> {
  const port = await freePort()
  const service = startService({ name: 'mock', args: [join(here, 'data-plane', 'frontier-mock.mjs'), '--port', String(port)], cwd: here, logFile: join(resultsDir, 'mock.log') })
  await waitUntilReady(service, async () => logTail(service).includes('listening'))
  return { service, origin: `http://127.0.0.1:${port}` }
}

/** The gateways taking turns (C only when `--c` is given). */
type Side = 'A' | 'B' | 'C'

/** bench/: results/ and README.md live here. */
const here = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({
  options: {
    a: { type: 'string', default: resolve(here, '..') },
    b: { type: 'string', default: resolve(here, '..') },
    'config-a': { type: 'string' },
    'config-b': { type: 'string' },
    /** A third gateway (e.g. A today's main, B this branch, C this branch with a feature on). */
    c: { type: 'string' },
    'config-c': { type: 'string' },
    'node-flags-c': { type: 'string', default: '' },
    /** Seconds of load before a fresh process's (or the first round's) window is measured. */
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '6' },
    window: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    profile: { type: 'boolean', default: false },
    'node-flags': { type: 'string', default: '' },
    'node-flags-a': { type: 'string', default: '' },
    'node-flags-b': { type: 'string', default: '' },
    'postgres-nice': { type: 'string', default: '0' },
    'postgres-cpus': { type: 'string', default: '' },
    'postgres-idle': { type: 'boolean', default: false },
    'gateway-cpus': { type: 'string', default: '' },
    /** A fresh process for each side's every window (warmed up 3 s first): spreads the process-to-process variance of one code's speed over the rounds. */
    fresh: { type: 'boolean', default: false },
    /** `stream: true` requests (the load generator reads each SSE answer to its end). */
    stream: { type: 'boolean', default: false },
    upstream: { type: 'string', default: 'simulator' },
  },
})
if (values.upstream !== 'simulator' && values.upstream !== 'mock') throw new Error(`--upstream takes simulator or mock (got ${values.upstream})`)
const rounds = Math.min(20, Math.max(1, Number(values.rounds)))
const windowSeconds = Math.min(30, Math.max(1, Number(values.window)))
const connections = Math.min(200, Math.max(1, Number(values.connections)))
const resultsDir = join(here, 'results', 'ab')
mkdirSync(resultsDir, { recursive: true })

const database = await startPrivateServer('ab')
// Where and how the server's processes run (set before the gateways connect: every backend
// forked later inherits the postmaster's niceness, policy and affinity).
const postmaster = Number(readFileSync(join(database.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
if (Number(values['postgres-nice']) !== 0) os.setPriority(postmaster, Number(values['postgres-nice']))
if (values['postgres-idle']) execFileSync('chrt', ['-i', '-p', '0', String(postmaster)])
if (values['postgres-cpus'] !== '') execFileSync('taskset', ['-pc', values['postgres-cpus'], String(postmaster)])
process.on('SIGINT', () => { killAllNow(); void database.dispose().then(() => process.exit(130)) })
try {
  const upstream = values.upstream === 'mock' ? await startMock() : await startSimulator({ resultsDir, name: 'ab' })
  const admin = new pg.Client({ connectionString: database.handle.url })
  await admin.connect()
  const wanted: [Side, string, string | undefined][] = [['A', values.a, values['config-a']], ['B', values.b, values['config-b']]]
  if (values.c !== undefined) wanted.push(['C', values.c, values['config-c']])
  /** Each side's command line and where it answers (its port and database stay the same across restarts). */
  const plans: { name: Side; checkout: string; args: string[]; origin: string }[] = []
  for (const [name, checkout, extra] of wanted) {
    await admin.query(`CREATE DATABASE ab_${name.toLowerCase()}`)
    const url = new URL(database.handle.url)
    url.pathname = `/ab_${name.toLowerCase()}`
    const config = {
      providers: { openai: { keys: [{ name: 'k1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: { base_url: upstream.origin } } },
      ...(extra ? JSON.parse(readFileSync(extra, 'utf8')) : {}),
    }
    const configFile = join(resultsDir, `${name}.config.json`)
    writeFileSync(configFile, JSON.stringify(config, null, 2))
    const port = await freePort()
    const args = [...values['node-flags'].split(' ').filter(Boolean), ...(name === 'A' ? values['node-flags-a'].split(' ').filter(Boolean) : []), ...(name === 'B' ? values['node-flags-b'].split(' ').filter(Boolean) : []), ...(name === 'C' ? values['node-flags-c'].split(' ').filter(Boolean) : []), ...(values.profile ? ['--cpu-prof', '--cpu-prof-dir', join(resultsDir, `profile-${name}`)] : []), join(checkout, 'packages/gateway/bin/switchboard.js'), 'serve', '--config', configFile, '--port', String(port), '--host', '127.0.0.1', '--p2p-port', '0', '--database-url', url.toString()]
    plans.push({ name, checkout, args, origin: `http://127.0.0.1:${port}` })
  }
  const launch = async (plan: (typeof plans)[number]) => {
    const service = startService({
      name: `switchboard-${plan.name}`,
      args: plan.args,
      cwd: plan.checkout,
      // One worker: the process measured is the one that serves (a node's primary serves nothing).
      env: { NODE_ENV: 'production', SWITCHBOARD_WORKERS: '1' },
      logFile: join(resultsDir, `${plan.name}.log`),
      graceMs: 15_000,
    })
    if (values['gateway-cpus'] !== '') execFileSync('taskset', ['-a', '-pc', values['gateway-cpus'], String(service.pid)])
    await waitUntilReady(service, async () => (await fetch(`${plan.origin}/health`).catch(() => null))?.status === 200, { timeoutMs: 120_000, intervalMs: 250 })
    return { name: plan.name, checkout: plan.checkout, origin: plan.origin, plan, target: { service, url: `${plan.origin}/v1/chat/completions`, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...(values.stream ? { stream: true } : {}) }) } }
  }
  const sides = []
  for (const plan of plans) sides.push(await launch(plan))
  await admin.end()
  const results: Record<Side, number[]> = { A: [], B: [], C: [] }
  const rps: Record<Side, number[]> = { A: [], B: [], C: [] }
  const served: Record<Side, number> = { A: 0, B: 0, C: 0 }
  // The main thread's CPU per request: the request path's JavaScript and the GC it does inline,
  // without V8's background GC threads, whose share swings between processes of the same code.
  const mainThread: Record<Side, number[]> = { A: [], B: [], C: [] }
  for (let round = 0; round < rounds; round++) {
    // each round starts with the next side and alternates direction, so no side always follows the same one's warm caches
    const turn = [...sides.slice(round % sides.length), ...sides.slice(0, round % sides.length)]
    for (const side of Math.floor(round / sides.length) % 2 === 0 ? turn : turn.reverse()) {
      if (values.fresh && round > 0) {
        // A new process for every window: how one process's JIT happened to settle weighs on one window, not the run.
        await stopService(side.target.service)
        side.target = (await launch(side.plan)).target
      }
      const pid: number | undefined = side.target.service.pid
      if (pid === undefined) throw new Error(`${side.name} has no process id (it did not start)`)
      const pgBefore = postgresCpuMs(postmaster)
      let split = { user: 0, system: 0 }
      let threads = new Map<string, number>()
      let calls = { reads: 0, writes: 0, voluntary: 0, involuntary: 0 }
      const run = await measure(side.target, upstream.service, { connections, duration: windowSeconds, warmup: round === 0 || values.fresh ? Number(values.warmup) : 1 }, {
        // the gateway's own user / system split over the measured window (system: mostly its socket writes)
        before: () => { split = userSystemMs(pid); threads = threadCpuMs(pid); calls = syscalls(pid) },
        after: () => {
          const nowCalls = syscalls(pid)
          calls = { reads: nowCalls.reads - calls.reads, writes: nowCalls.writes - calls.writes, voluntary: nowCalls.voluntary - calls.voluntary, involuntary: nowCalls.involuntary - calls.involuntary }
          const now = userSystemMs(pid)
          split = { user: now.user - split.user, system: now.system - split.system }
          for (const [name, ms] of threadCpuMs(pid)) threads.set(name, ms - (threads.get(name) ?? 0))
        },
      })
      const pgMs = (postgresCpuMs(postmaster) - pgBefore) / run.requests
      results[side.name].push(run.cpuMsPerRequest)
      rps[side.name].push(run.rps)
      served[side.name] += run.requests
      mainThread[side.name].push((threads.get('main') ?? 0) / run.requests)
      const perThread = [...threads].filter(([, ms]) => ms > 0).map(([name, ms]) => `${name} ${(ms / run.requests).toFixed(4)}`).join(', ')
      console.log(`round ${round + 1} ${side.name}: ${run.cpuMsPerRequest.toFixed(4)} ms/req, ${Math.round(run.rps)} rps, postgres ${pgMs.toFixed(4)} ms/req, user/system ${(split.user / run.requests).toFixed(4)}/${(split.system / run.requests).toFixed(4)}, simulator ${run.upstreamCpuMsPerRequest.toFixed(4)}, load generator ${run.benchCpuMsPerRequest.toFixed(4)}, machine busy ${(run.machineBusyShare * 100).toFixed(0)}%, other work ${(run.foreignCpuShare * 100).toFixed(0)}%; per 1k req: reads ${(1000 * calls.reads / run.requests).toFixed(0)} writes ${(1000 * calls.writes / run.requests).toFixed(0)} switches ${(1000 * calls.voluntary / run.requests).toFixed(0)}/${(1000 * calls.involuntary / run.requests).toFixed(0)}; threads ms/req: ${perThread}`)
    }
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? NaN
  const labels: Record<Side, string> = { A: `${values.a}${values['config-a'] ? ` (${values['config-a']})` : ''}`, B: `${values.b}${values['config-b'] ? ` (${values['config-b']})` : ''}`, C: `${values.c}${values['config-c'] ? ` (${values['config-c']})` : ''}` }
  console.log('')
  for (const side of sides) console.log(`${side.name} ${labels[side.name]}: median ${median(results[side.name]).toFixed(4)} ms/req`)
  if (values.profile) {
    // warm-ups included: what the profiles saw
    const answered = async (origin: string) => {
      const text = await (await fetch(`${origin}/metrics`)).text()
      let sum = 0
      for (const match of text.matchAll(/^switchboard_requests_total(?:\{[^}]*\})? (\d+)/gm)) sum += Number(match[1])
      return sum
    }
    for (const side of sides) console.log(`${side.name} answered ${await answered(side.origin)} requests in all (measured windows: ${served[side.name]})`)
  }
  const pairs: [Side, Side][] = sides.length === 3 ? [['B', 'A'], ['C', 'B'], ['C', 'A']] : [['B', 'A']]
  for (const [x, y] of pairs) {
    console.log(`${x} / ${y}: CPU per request ${(median(results[x]) / median(results[y])).toFixed(3)}x, RPS ${(median(rps[x]) / median(rps[y])).toFixed(3)}x`)
    // Paired within each round (the windows run back to back), then the median over rounds.
    const paired = mainThread[y].map((base, round) => mainThread[x][round]! / base)
    const pairedWhole = results[y].map((base, round) => results[x][round]! / base)
    console.log(`${x} / ${y}: main-thread CPU per request ${(median(mainThread[x]) / median(mainThread[y])).toFixed(3)}x (medians ${median(mainThread[y]).toFixed(4)} / ${median(mainThread[x]).toFixed(4)} ms/req); paired by round, median ${median(paired).toFixed(3)}x, range ${Math.min(...paired).toFixed(3)}-${Math.max(...paired).toFixed(3)}x; whole process paired by round, median ${median(pairedWhole).toFixed(3)}x`)
  }
} finally {
  await stopAll()
  await database.dispose()
}
