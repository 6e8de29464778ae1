/**
 * End-to-end hold propagation through real gateway nodes (issue 6; design.md budget: a hold
 * seen by every node of a local 3-node fleet within 250 ms p99). Where `propagation.mjs`
 * times one gossip message between bare cluster nodes, this times what an operator sees:
 * a key refused on node A until EVERY other node's `GET /api/adaptive-routing/conditions`
 * lists it, and an operator release on node B until no node lists it any more.
 *
 * Run from the repository root:
 *
 *   node --import tsx bench/fleet/holds.ts [--nodes 3,10] [--rounds 200,200] [--warmup 4]
 *     [--interval 2] [--per-node 1] [--quiet-wait 600] [--quiet-threshold 0.15]
 *     [--max-minutes 45] [--no-readme]
 *
 * Setup per fleet size: the simulator (own process) refuses the key `refused` with
 * `invalid_api_key`; one provider `openai` with keys {refused (models *), healthy (gpt-4o
 * only)}, so a request for `openai/gpt-4o-mini` lands on the refused key every time: one
 * request per round. The nodes are `launchFleet` (@switchboard/test-kit) gateway processes on 127.0.0.1
 * (two regions, alternating) on one fresh database of an embedded PostgreSQL of the bench's
 * own (`bench/.switchboard/holds/`), with LOG_LEVEL=debug so each node logs when it merged
 * holds from gossip. Measuring starts once every node's `GET /api/cluster` lists every
 * member, after `--warmup` rounds that are not counted.
 *
 * A round is a hold (a chat request to node A, round-robin) and then a release (a clear on
 * the next node). Rounds alternate between polled and unpolled:
 * - polled: every node, origin included, is polled concurrently over `--per-node` keep-alive
 *   connections each, one poll in flight per connection, the next `--interval` ms after the
 *   previous one was sent (0: at once). The change is made once every node answered at least
 *   once without it. A poll that did not show the change was handled after it was sent, one
 *   that did was answered after the change: the node's arrival lies between its last "not
 *   yet" send and its first "there" answer (the bracket); the bench takes the middle.
 * - unpolled: nothing but the change request, so polling load cannot slow the fleet down;
 *   only the logs time it.
 * The origin's moment is the intersection of what is known of it: the change request's send
 * and answer, the origin's own poll bracket (polled rounds), and for a hold the origin's
 * warn line (pino `time`, Date.now(), whole ms). Log times are put on the bench's clock with
 * an offset read where Date.now() ticks over (median of the last nine, one before each change).
 *
 * A shared machine: before each change the bench waits (up to `--quiet-wait` s per fleet in
 * all) until processes that are not this run's (machine busy time from /proc/stat minus this
 * process's tree and its PostgreSQL) used under `--quiet-threshold` of the machine over
 * 0.5 s; it reports that share per change. Bounded: every wait has a deadline, the run
 * `--max-minutes`; every process started here is stopped at the end, also on failure or
 * Ctrl-C. Raw numbers go to bench/results/holds-raw.json, node logs to
 * bench/results/holds-<n>-nodes.log.
 */
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { execFileSync, type ChildProcess } from 'node:child_process'
import { Client } from 'undici'
import { ensureDatabase, type DatabaseHandle } from '@switchboard/store'
import { freePort, freshDatabase, launchFleet, startSimulatorProcess, type LocalFleet } from '@switchboard/test-kit'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const resultsDir = join(benchDir, 'results')
const readmePath = join(benchDir, 'README.md')
const REFUSED_KEY = 'sk-bench-holds-refused-0001'
const HEALTHY_KEY = 'sk-bench-holds-healthy-0002'
const REFUSED_NAME = 'refused'
/** Longest a change may take to show everywhere before the round counts as failed. */
const CHANGE_DEADLINE_MS = 10_000
const MAX_FAILED_ROUNDS = 5

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3,10' },
    rounds: { type: 'string', default: '200,200' },
    warmup: { type: 'string', default: '4' },
    interval: { type: 'string', default: '2' },
    'per-node': { type: 'string', default: '1' },
    'quiet-wait': { type: 'string', default: '600' },
    'quiet-threshold': { type: 'string', default: '0.15' },
    'max-minutes': { type: 'string', default: '45' },
    'no-readme': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
})
const usage = 'node --import tsx bench/fleet/holds.ts [--nodes 3,10] [--rounds 200,200] [--warmup 4] [--interval 2] [--per-node 1] [--quiet-wait 600] [--quiet-threshold 0.15] [--max-minutes 45] [--no-readme]'
if (values.help) {
  console.log(usage)
  process.exit(0)
}
const clamp = (value: number, low: number, high: number, fallback: number) => (Number.isFinite(value) ? Math.min(Math.max(value, low), high) : fallback)
const sizes = values.nodes.split(',').map(Number).filter((size) => Number.isInteger(size) && size >= 2 && size <= 20)
const roundsList = values.rounds.split(',').map((value) => Math.round(clamp(Number(value), 2, 2_000, 40)))
const roundsFor = (index: number) => roundsList[Math.min(index, roundsList.length - 1)]!
const warmupRounds = Math.round(clamp(Number(values.warmup), 0, 50, 4))
const intervalMs = clamp(Number(values.interval), 0, 100, 2)
const perNode = Math.round(clamp(Number(values['per-node']), 1, 8, 1))
const quietWaitMs = clamp(Number(values['quiet-wait']), 0, 3_600, 600) * 1000
const quietThreshold = clamp(Number(values['quiet-threshold']), 0.01, 1, 0.15)
const maxRunMs = clamp(Number(values['max-minutes']), 1, 120, 45) * 60_000
if (sizes.length === 0) {
  console.error(`--nodes: give fleet sizes from 2 to 20, comma-separated\n${usage}`)
  process.exit(2)
}

const cores = availableParallelism()
const now = () => performance.now()
const runDeadline = now() + maxRunMs
const sleep = (ms: number) => new Promise<void>((resolveSleep) => setTimeout(resolveSleep, Math.max(0, ms)))
const checkRunDeadline = () => {
  if (now() > runDeadline) throw new Error(`the run passed --max-minutes (${maxRunMs / 60_000})`)
}

// ---------------------------------------------------------------- processes and cleanup

const cleanups: (() => Promise<void>)[] = []
const children = new Set<ChildProcess>()
let cleaning: Promise<void> | undefined
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.splice(0).reverse()) {
      await step().catch((error: unknown) => console.error('cleanup step failed:', error))
    }
  })()
  return cleaning
}
process.on('exit', () => {
  // Last resort (a crash past the cleanup): no child outlives the bench.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping everything this run started`)
    void cleanup().finally(() => process.exit(130))
  })
}
// If something hangs past every deadline: stop anyway (the cleanup has 60 s on top).
const hardStop = setTimeout(() => {
  console.error('hard deadline reached: stopping')
  void cleanup().finally(() => process.exit(1))
}, maxRunMs + 60_000)
hardStop.unref()

// ---------------------------------------------------------------- CPU accounting (/proc)

const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/** Machine CPU time (ms) spent running processes: user + nice + system + steal from /proc/stat. */
function machineBusyMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const [user = 0, nice = 0, system = 0] = fields
  const steal = fields[7] ?? 0
  return ((user + nice + system + steal) * 1000) / clockTicks
}

interface ProcStat {
  pid: number
  ppid: number
  ticks: number
}

function readProcStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { pid, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) }
  } catch {
    return null
  }
}

/**
 * CPU time (ms) of this run: this process and its descendants (gateway nodes, simulator),
 * plus the embedded PostgreSQL of `pgDataDir` and its backends (pg_ctl daemonises it, so it
 * is not our descendant). Time of our processes that exited in between is lost, which only
 * makes "others" look larger: the honest direction.
 */
function ownCpuMs(pgDataDir: string | undefined): number {
  const byParent = new Map<number, ProcStat[]>()
  const roots: ProcStat[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readProcStat(Number(entry))
    if (stat === null) continue
    if (!byParent.has(stat.ppid)) byParent.set(stat.ppid, [])
    byParent.get(stat.ppid)!.push(stat)
    if (stat.pid === process.pid) roots.push(stat)
    else if (pgDataDir !== undefined) {
      try {
        if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(pgDataDir)) roots.push(stat)
      } catch {
        // gone
      }
    }
  }
  const seen = new Set<number>()
  let ticks = 0
  const queue = [...roots]
  while (queue.length > 0) {
    const stat = queue.pop()!
    if (seen.has(stat.pid)) continue
    seen.add(stat.pid)
    ticks += stat.ticks
    queue.push(...(byParent.get(stat.pid) ?? []))
  }
  return (ticks * 1000) / clockTicks
}

interface CpuMark {
  at: number
  machine: number
  own: number
}
let pgDataDirForCpu: string | undefined
const cpuMark = (): CpuMark => ({ at: now(), machine: machineBusyMs(), own: ownCpuMs(pgDataDirForCpu) })
/** Shares of the machine (0..1) used between two marks by others and by this run. */
function cpuShares(from: CpuMark, to: CpuMark): { other: number; own: number } {
  const capacity = Math.max(1, to.at - from.at) * cores
  const own = Math.max(0, to.own - from.own)
  const other = Math.max(0, to.machine - from.machine - own)
  return { other: other / capacity, own: own / capacity }
}

/** Spent waiting for quiet in the current fleet (bounded by --quiet-wait). */
let quietSpentMs = 0
let quietGaveUp = false
let quietSaidAt = Number.NEGATIVE_INFINITY
/**
 * Waits until others' CPU was under the threshold for 0.5 s, within the fleet's quiet budget.
 * Returns the mark the change's "others" share is measured from.
 */
async function waitForQuiet(): Promise<CpuMark> {
  for (;;) {
    checkRunDeadline()
    const start = cpuMark()
    await sleep(500)
    const end = cpuMark()
    const { other } = cpuShares(start, end)
    if (other < quietThreshold || quietGaveUp) return start
    quietSpentMs += end.at - start.at
    if (quietSpentMs >= quietWaitMs) {
      quietGaveUp = true
      console.log(`  others still use ${(100 * other).toFixed(0)}% of the machine and the quiet budget (${quietWaitMs / 1000} s) is spent: measuring anyway`)
      return start
    }
    if (end.at - quietSaidAt > 30_000) {
      console.log(`  others use ${(100 * other).toFixed(0)}% of the machine: waiting for quiet (budget left ${((quietWaitMs - quietSpentMs) / 1000).toFixed(0)} s)`)
      quietSaidAt = end.at
    }
  }
}

// ---------------------------------------------------------------- clocks

/**
 * Offset from the bench's performance.now() to Date.now()'s clock (which the nodes' log times
 * use), read at the moment Date.now() ticks over to the next millisecond, so it is good to
 * a few microseconds rather than to the millisecond. A tick seen across a long gap between two
 * readings (the process was descheduled) is not trusted: the next tick is used. Busy-waits
 * at most ~6 ms.
 */
function clockOffset(): number {
  let last = Date.now()
  let previous = now()
  const limit = previous + 6
  for (;;) {
    const at = now()
    const wall = Date.now()
    if (wall !== last) {
      if (at - previous < 0.02) return wall - at
      last = wall
    }
    if (at > limit) return wall + 0.5 - at
    previous = at
  }
}

const offsetReadings: number[] = []
/** The median of the last 9 offset readings: one reading disturbed by a preemption does not move it. */
function steadyClockOffset(): number {
  offsetReadings.push(clockOffset())
  if (offsetReadings.length > 9) offsetReadings.shift()
  const sorted = [...offsetReadings].sort((x, y) => x - y)
  return sorted[Math.floor(sorted.length / 2)]!
}

// ---------------------------------------------------------------- HTTP

interface Condition {
  provider: string
  key_id: string
  key_name?: string
  model: string | null
}

const listsRefused = (conditions: Condition[]) => conditions.some((condition) => condition.key_name === REFUSED_NAME)

async function getJson(client: Client, path: string): Promise<unknown> {
  const { statusCode, body } = await client.request({ method: 'GET', path, headersTimeout: 10_000, bodyTimeout: 10_000 })
  const text = await body.text()
  if (statusCode !== 200) throw new Error(`GET ${path} answered ${statusCode}: ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

async function postJson(client: Client, path: string, payload: unknown): Promise<{ status: number; json: any }> {
  const { statusCode, body } = await client.request({
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  })
  const text = await body.text()
  try {
    return { status: statusCode, json: JSON.parse(text) }
  } catch {
    throw new Error(`POST ${path} answered ${statusCode} with no JSON: ${text.slice(0, 300)}`)
  }
}

const conditionsOf = async (client: Client) => ((await getJson(client, '/api/adaptive-routing/conditions')) as { conditions: Condition[] }).conditions

interface Bracket {
  lo: number
  hi: number
}
const middle = (bracket: Bracket) => (bracket.lo + bracket.hi) / 2
const intersect = (a: Bracket, b: Bracket): Bracket => ({ lo: Math.max(a.lo, b.lo), hi: Math.min(a.hi, b.hi) })

/**
 * Watches one node for a change over several keep-alive connections: each keeps one poll in
 * flight, the next `intervalMs` after its previous one was sent (0: at once), the connections
 * started 1 ms apart so their polls interleave. Resolves with the bracket around the node's
 * arrival time: the latest send of a poll that did not show the change, the earliest answer
 * of one that did.
 */
class NodeWatch {
  before = 0
  polls = 0
  readonly rtts: number[] = []
  private lastBefore = Number.NaN
  private firstAfter = Number.NaN
  private stopped = false
  readonly done: Promise<Bracket>
  constructor(clients: Client[], shows: (conditions: Condition[]) => boolean, deadline: number) {
    const loop = async (client: Client, offsetMs: number) => {
      if (offsetMs > 0) await sleep(offsetMs)
      while (!this.stopped && Number.isNaN(this.firstAfter)) {
        if (now() > deadline) throw new Error('the change did not show within the deadline')
        const sent = now()
        const conditions = await conditionsOf(client)
        const answered = now()
        this.polls++
        this.rtts.push(answered - sent)
        if (shows(conditions)) {
          if (this.before === 0) throw new Error('the first poll already showed the change: the round did not start from a clean state')
          if (Number.isNaN(this.firstAfter) || answered < this.firstAfter) this.firstAfter = answered
          return
        }
        this.before++
        if (Number.isNaN(this.lastBefore) || sent > this.lastBefore) this.lastBefore = sent
        const wait = sent + intervalMs - now()
        if (wait >= 1) await sleep(Math.round(wait))
      }
    }
    // Every loop runs out (a poll still in flight may narrow the bracket) before the result is read.
    this.done = Promise.all(clients.map((client, index) => loop(client, index))).then(() => {
      if (Number.isNaN(this.firstAfter)) throw new Error('stopped before the change showed')
      return { lo: this.lastBefore, hi: this.firstAfter }
    })
    this.done.catch(() => {})
  }
  stop() {
    this.stopped = true
  }
}

// ---------------------------------------------------------------- node logs

interface LogEvent {
  nodeId: string
  /** pino `time`: Date.now() in the node, whole ms. */
  time: number
  kind: 'placed' | 'merged'
  source?: string
}
let logEvents: LogEvent[] = []
let logStream: NodeJS.WritableStream | undefined
let unparsedLines = 0
function onNodeLine(nodeId: string, line: string) {
  logStream?.write(`${nodeId} ${line}\n`)
  if (!line.startsWith('{')) return
  let parsed: { level?: number; time?: number; msg?: string; key?: string; source?: string }
  try {
    parsed = JSON.parse(line)
  } catch {
    unparsedLines++
    return
  }
  if (typeof parsed.time !== 'number') return
  if (parsed.msg === 'merged holds') logEvents.push({ nodeId, time: parsed.time, kind: 'merged', source: parsed.source ?? '' })
  else if (parsed.level === 40 && parsed.key === REFUSED_NAME && typeof parsed.msg === 'string' && /holding that key back/i.test(parsed.msg)) logEvents.push({ nodeId, time: parsed.time, kind: 'placed' })
}

// ---------------------------------------------------------------- one fleet

type Kind = 'hold' | 'release'

interface Sample {
  kind: Kind
  polled: boolean
  /** Polled rounds: latest API arrival among the other nodes minus the origin's moment (ms). */
  api: number
  apiPerReceiver: number[]
  /** Latest logged merge among the other nodes minus the origin's moment (ms). */
  logs: number
  logsPerReceiver: number[]
  /** Widths of the other nodes' API brackets (ms), polled rounds. */
  widths: number[]
  /** Width of the origin's bracket (ms). */
  originWidth: number
  /** Brackets that did not overlap where they should have (the origin's, against each other). */
  inconsistent: number
  /** Receivers whose merge did not come by gossip (anti-entropy, a join pull). */
  notByGossip: number
  /** From the change request's send: the origin's moment (middle) and the answer (ms). */
  originAfterSend: number
  answerAfterSend: number
  other: number
  own: number
  detail: unknown
}

interface FleetResult {
  size: number
  rounds: number
  samples: Sample[]
  failures: string[]
  launchMs: number
  membershipMs: number
  idleShares: { other: number; own: number }
  pollRtts: number[]
  pollsPerSecond: number
  quietSpentMs: number
  quietGaveUp: boolean
}

async function runFleet(size: number, rounds: number, database: DatabaseHandle, simulatorUrl: string, stateDir: string): Promise<FleetResult> {
  const databaseUrl = await freshDatabase(database.url, `switchboard_bench_holds_${size}`)
  const configFile = join(stateDir, `config-${size}.json`)
  const config = {
    providers: {
      openai: {
        keys: [
          { name: REFUSED_NAME, value: REFUSED_KEY, models: ['*'], weight: 1 },
          { name: 'healthy', value: HEALTHY_KEY, models: ['gpt-4o'], weight: 1 },
        ],
        network_config: { base_url: simulatorUrl, max_retries: 0 },
      },
    },
  }
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`)
  quietSpentMs = 0
  quietGaveUp = false
  logEvents = []
  const stream = createWriteStream(join(resultsDir, `holds-${size}-nodes.log`))
  logStream = stream
  const closeLog = () => new Promise<void>((resolveEnd) => (stream.closed ? resolveEnd() : stream.end(() => resolveEnd())))
  cleanups.push(closeLog)

  console.log(`\n${size} nodes: starting the gateways (after waiting for quiet)`)
  await waitForQuiet()
  const launchedAt = now()
  const specs = Array.from({ length: size }, (_, index) => ({ nodeId: `node-${String(index + 1).padStart(2, '0')}`, region: index % 2 === 0 ? 'eu' : 'us' }))
  const fleet: LocalFleet = await launchFleet({
    nodes: specs,
    configFile,
    databaseUrl,
    fleetSecret: `bench-holds-${size}-0123456789abcdef`,
    stateDir: join(stateDir, `fleet-${size}`),
    env: { LOG_LEVEL: 'debug', NODE_ENV: 'production' },
    onLine: onNodeLine,
  })
  for (const node of fleet.nodes) if (node.child) children.add(node.child)
  let stopped = false
  const stopFleet = async () => {
    if (stopped) return
    stopped = true
    await fleet.stop()
  }
  cleanups.push(stopFleet)
  const launchMs = now() - launchedAt
  console.log(`  every process answers after ${(launchMs / 1000).toFixed(1)} s`)

  const keepAlive = { pipelining: 1, keepAliveTimeout: 120_000, keepAliveMaxTimeout: 120_000 }
  const pollClients = fleet.nodes.map((node) => Array.from({ length: perNode }, () => new Client(node.url, keepAlive)))
  const actionClients = fleet.nodes.map((node) => new Client(node.url, keepAlive))
  const otherIndexes = (origin: number) => fleet.nodes.map((_, index) => index).filter((index) => index !== origin)
  try {
    // Full membership on every node, bounded.
    const membershipDeadline = now() + 180_000
    for (;;) {
      checkRunDeadline()
      const counts = await Promise.all(actionClients.map(async (client) => ((await getJson(client, '/api/cluster').catch(() => ({ members: [] }))) as { members: unknown[] }).members.length))
      if (counts.every((count) => count === size)) break
      if (now() > membershipDeadline) throw new Error(`no full membership after 180 s: members per node ${counts.join(', ')}`)
      await sleep(100)
    }
    const membershipMs = now() - launchedAt - launchMs
    console.log(`  full membership ${(membershipMs / 1000).toFixed(1)} s later`)

    // What the idle fleet costs (heartbeats, gossipsub), and whether others are busy.
    await sleep(2_000)
    const idleFrom = cpuMark()
    await sleep(3_000)
    const idleShares = cpuShares(idleFrom, cpuMark())
    console.log(`  idle fleet + bench: ${(100 * idleShares.own).toFixed(0)}% of the machine; others: ${(100 * idleShares.other).toFixed(0)}%`)

    const samples: Sample[] = []
    const failures: string[] = []
    const pollRtts: number[] = []
    let pollCount = 0
    let pollingMs = 0

    /** Resolves once `check()` is true, looking every ms; throws past `deadline`. */
    const until = async (check: () => boolean, deadline: number, what: string) => {
      while (!check()) {
        if (now() > deadline) throw new Error(`timed out waiting for ${what}`)
        await sleep(1)
      }
    }

    /** One change (a hold placed on `origin`, or a release there), timed on every node. */
    const measure = async (kind: Kind, origin: number, polled: boolean): Promise<Sample> => {
      const shows = kind === 'hold' ? listsRefused : (conditions: Condition[]) => !listsRefused(conditions)
      const gateMark = await waitForQuiet()
      const offset = steadyClockOffset()
      const toBench = (wallMs: number) => wallMs - offset
      logEvents = []
      const deadline = now() + CHANGE_DEADLINE_MS
      const pollStart = now()
      const watches = polled ? pollClients.map((clients) => new NodeWatch(clients, shows, deadline)) : []
      try {
        // Every node answered at least once without the change.
        while (watches.some((watch) => watch.before === 0)) {
          if (now() > deadline) throw new Error('pollers did not see the state before the change')
          await Promise.race([sleep(1), ...watches.map((watch) => watch.done)])
        }
        const originId = fleet.nodes[origin]!.nodeId
        const sentAt = now()
        if (kind === 'hold') {
          const { status, json } = await postJson(actionClients[origin]!, '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
          const attempts = (json?.extra_fields?.attempts ?? json?.error?.extra_fields?.attempts ?? []) as { key_name?: string; failure_class?: string | null }[]
          if (!attempts.some((attempt) => attempt.key_name === REFUSED_NAME && attempt.failure_class === 'credential')) {
            throw new Error(`the request to ${originId} did not meet the refused key (status ${status}): ${JSON.stringify(json).slice(0, 400)}`)
          }
        } else {
          const { status, json } = await postJson(actionClients[origin]!, '/api/adaptive-routing/conditions/clear', {})
          if (status !== 200 || json?.count !== 1) throw new Error(`clear on ${originId} answered ${status}: ${JSON.stringify(json).slice(0, 300)}`)
        }
        const answeredAt = now()
        const others = otherIndexes(origin)
        const apiBrackets = polled ? await Promise.all(watches.map((watch) => watch.done)) : []
        if (polled) {
          pollingMs += now() - pollStart
          for (const watch of watches) {
            pollCount += watch.polls
            pollRtts.push(...watch.rtts)
          }
        }
        // The logs: every other node merged it (and, for a hold, the origin placed it).
        const merged = (nodeId: string) => logEvents.find((event) => event.kind === 'merged' && event.nodeId === nodeId)
        const placed = () => logEvents.find((event) => event.kind === 'placed' && event.nodeId === originId)
        await until(() => others.every((index) => merged(fleet.nodes[index]!.nodeId) !== undefined) && (kind === 'release' || placed() !== undefined), now() + CHANGE_DEADLINE_MS, 'every node to log the merge')
        if (!polled) {
          // Not timed: only that the API agrees with the logs.
          const states = await Promise.all(actionClients.map(async (client) => shows(await conditionsOf(client))))
          if (!states.every(Boolean)) throw new Error(`after every node logged the merge, not every node's API showed the ${kind}`)
        }

        // The origin's moment: everything known about it, intersected.
        let inconsistent = 0
        let originBracket: Bracket = { lo: sentAt, hi: answeredAt }
        const narrow = (by: Bracket) => {
          const next = intersect(originBracket, by)
          if (next.lo > next.hi) inconsistent++
          else originBracket = next
        }
        const placedEvent = placed()
        if (kind === 'hold' && placedEvent) narrow({ lo: toBench(placedEvent.time), hi: toBench(placedEvent.time + 1) })
        if (polled) narrow(apiBrackets[origin]!)
        const originAt = middle(originBracket)

        const apiPerReceiver = polled ? others.map((index) => middle(apiBrackets[index]!) - originAt) : []
        const logsPerReceiver = others.map((index) => toBench(merged(fleet.nodes[index]!.nodeId)!.time + 0.5) - originAt)
        const notByGossip = others.filter((index) => !merged(fleet.nodes[index]!.nodeId)!.source?.startsWith('gossip')).length
        // A receiver's API cannot show the change before its merge was logged (same tick), give or take the 1 ms.
        if (polled) for (const index of others) if (apiBrackets[index]!.hi < toBench(merged(fleet.nodes[index]!.nodeId)!.time) - 1) inconsistent++
        const shares = cpuShares(gateMark, cpuMark())
        return {
          kind,
          polled,
          api: polled ? Math.max(...apiPerReceiver) : Number.NaN,
          apiPerReceiver,
          logs: Math.max(...logsPerReceiver),
          logsPerReceiver,
          widths: polled ? others.map((index) => apiBrackets[index]!.hi - apiBrackets[index]!.lo) : [],
          originWidth: originBracket.hi - originBracket.lo,
          inconsistent,
          notByGossip,
          originAfterSend: originAt - sentAt,
          answerAfterSend: answeredAt - sentAt,
          other: shares.other,
          own: shares.own,
          detail: {
            origin: originId,
            // times relative to the change request's send, ms
            answered: answeredAt - sentAt,
            originBracket: [originBracket.lo - sentAt, originBracket.hi - sentAt],
            api: polled ? apiBrackets.map((bracket, index) => ({ node: fleet.nodes[index]!.nodeId, lo: bracket.lo - sentAt, hi: bracket.hi - sentAt })) : [],
            logs: logEvents.map((event) => ({ node: event.nodeId, kind: event.kind, at: toBench(event.time) - sentAt, ...(event.source ? { source: event.source } : {}) })),
          },
        }
      } finally {
        for (const watch of watches) watch.stop()
        await Promise.allSettled(watches.map((watch) => watch.done))
      }
    }

    /** After a failed round: release everything and wait until no node lists the key (bounded). */
    const recover = async () => {
      await postJson(actionClients[0]!, '/api/adaptive-routing/conditions/clear', {}).catch(() => {})
      const deadline = now() + 30_000
      for (;;) {
        const states = await Promise.all(actionClients.map(async (client) => listsRefused(await conditionsOf(client))))
        if (!states.some(Boolean)) return
        if (now() > deadline) throw new Error('could not get back to a clean state after a failed round')
        await sleep(200)
      }
    }

    const total = warmupRounds + rounds
    for (let round = 0; round < total; round++) {
      checkRunDeadline()
      const counted = round >= warmupRounds
      const polled = round % 2 === 0
      const origin = round % size
      try {
        const held = await measure('hold', origin, polled)
        const released = await measure('release', (origin + 1) % size, polled)
        if (counted) samples.push(held, released)
        if (!counted || (round - warmupRounds) % 20 === 19 || round === total - 1) {
          const api = (sample: Sample) => (sample.polled ? `API ${sample.api.toFixed(1)} ms, ` : '')
          console.log(`  ${counted ? `round ${round - warmupRounds + 1}/${rounds}` : `warm-up ${round + 1}/${warmupRounds}`} (${polled ? 'polled' : 'unpolled'}): hold ${api(held)}logs ${held.logs.toFixed(1)} ms; release ${api(released)}logs ${released.logs.toFixed(1)} ms; others ${(100 * Math.max(held.other, released.other)).toFixed(0)}%`)
        }
      } catch (error) {
        const message = `round ${round + 1}: ${error instanceof Error ? error.message : String(error)}`
        console.log(`  FAILED ${message}`)
        failures.push(message)
        if (failures.length > MAX_FAILED_ROUNDS) throw new Error(`more than ${MAX_FAILED_ROUNDS} rounds failed:\n${failures.join('\n')}`)
        await recover()
      }
    }
    return {
      size,
      rounds,
      samples,
      failures,
      launchMs,
      membershipMs,
      idleShares,
      pollRtts,
      pollsPerSecond: pollingMs > 0 ? (pollCount * 1000) / pollingMs : Number.NaN,
      quietSpentMs,
      quietGaveUp,
    }
  } finally {
    await Promise.all([...pollClients.flat(), ...actionClients].map((client) => client.close().catch(() => {})))
    await stopFleet()
    for (const node of fleet.nodes) if (node.child) children.delete(node.child)
    logStream = undefined
    await closeLog()
  }
}

// ---------------------------------------------------------------- report

function percentile(values: number[], fraction: number): number {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!
}
const largest = (values: number[]) => percentile(values, 1)
const ms = (value: number) => (Number.isFinite(value) ? (Math.abs(value) < 10 ? value.toFixed(1) : Math.round(value).toString()) : 'n/a')
const pct = (value: number) => (Number.isFinite(value) ? `${Math.round(100 * value)}%` : 'n/a')
const triple = (values: number[]) => `${ms(percentile(values, 0.5))} / ${ms(percentile(values, 0.99))} / ${ms(largest(values))}`

function rows(result: FleetResult): string[] {
  return (['hold', 'release'] as const).map((kind) => {
    const samples = result.samples.filter((sample) => sample.kind === kind)
    const polled = samples.filter((sample) => sample.polled)
    const unpolled = samples.filter((sample) => !sample.polled)
    const others = samples.map((sample) => sample.other)
    const busy = others.filter((share) => share >= quietThreshold).length
    const what = kind === 'hold' ? 'hold (key refused on A)' : 'release (clear on B)'
    return [
      `| ${result.size}`,
      what,
      `${polled.length} + ${unpolled.length}`,
      triple(polled.map((sample) => sample.api)),
      `${ms(percentile(polled.flatMap((sample) => sample.apiPerReceiver), 0.5))} / ${ms(percentile(polled.flatMap((sample) => sample.apiPerReceiver), 0.99))}`,
      triple(polled.map((sample) => sample.logs)),
      triple(unpolled.map((sample) => sample.logs)),
      `${ms(percentile(polled.flatMap((sample) => sample.widths), 0.5))} / ${ms(percentile(polled.flatMap((sample) => sample.widths), 0.99))}`,
      `${ms(percentile(samples.map((sample) => sample.originWidth), 0.5))} / ${ms(percentile(samples.map((sample) => sample.originWidth), 0.99))}`,
      `${pct(percentile(others, 0.5))} / ${pct(largest(others))}${busy > 0 ? ` (${busy} >= ${pct(quietThreshold)})` : ''} |`,
    ].join(' | ')
  })
}

/** Wraps prose at ~88 columns; `indent` goes before continuation lines (list items). */
function wrap(text: string, indent = ''): string {
  const out: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > 88) {
      out.push(line)
      line = indent + word
    } else line = line === '' ? word : `${line} ${word}`
  }
  if (line !== '') out.push(line)
  return out.join('\n')
}

function section(results: FleetResult[], facts: { date: string; load: string; command: string }): string {
  const blocks: string[] = []
  const para = (text: string) => blocks.push(wrap(text))
  const bullet = (text: string) => blocks.push(wrap(`- ${text}`, '  '))
  blocks.push('### End to end, through gateway nodes (`holds.ts`)')
  para("`holds.ts` (issue 6) measures what an operator sees: a key refused on node A until every other node's `GET /api/adaptive-routing/conditions` lists it, and an operator release (`POST /api/adaptive-routing/conditions/clear`) on node B until no node lists it. The nodes are real `switchboard serve` processes started by `scripts/fleet/launch.ts` (two regions, alternating; one fresh database on an embedded PostgreSQL of the bench's own; LOG_LEVEL=debug). The simulator refuses the key `refused` (`invalid_api_key`); it is the only key of provider `openai` serving `gpt-4o-mini` (the other key, `healthy`, serves only `gpt-4o`), so one chat request for `openai/gpt-4o-mini` places the hold. A goes round-robin over the nodes, B is the node after A. Measuring starts when every node's `GET /api/cluster` lists every member, after " + `${warmupRounds} uncounted warm-up rounds; every loop and wait is bounded, and every process the run starts is stopped at the end.`)
  blocks.push(['```sh', 'node --import tsx bench/fleet/holds.ts   # from the repository root', `# flags: --nodes 3,10 --rounds 200,200 --warmup 4 --interval 2 --per-node 1 --quiet-wait 600 --quiet-threshold 0.15 --max-minutes 45 --no-readme`, '```'].join('\n'))
  para('How it is timed. Rounds alternate between two kinds:')
  blocks.push(
    [
      wrap(`- polled: every node, the origin too, is polled at once over ${perNode === 1 ? 'its own keep-alive connection, one poll in flight' : `${perNode} keep-alive connections of its own, one poll in flight on each`}, the next ${intervalMs === 0 ? 'as soon as the previous one answered' : `${intervalMs} ms after the previous one was sent (at once if it took longer)`}; the change is made once every node has answered without it. A poll that did not show the change was handled after it was sent, and one that did was answered after the change, so a node's arrival lies between its last "not yet" send and its first "there" answer: its bracket. The middle of the bracket is taken as the arrival, and the bracket's width is the resolution (column "bracket").`, '  '),
      wrap('- unpolled: the change request only, so polling load cannot slow the fleet down; timed by the logs alone.', '  '),
    ].join('\n'),
  )
  para(`The origin's moment is the intersection of what is known of it: the change request's send and answer, the origin's own bracket (polled rounds) and, for a hold, A's warn line (pino \`time\`, Date.now() in whole ms); its width is column "origin". "API" = the last other node's arrival minus the origin's moment: what an operator polling the API sees, receivers' HTTP included. "Logs" = the last other node's debug line \`merged holds\` (written in the same tick in which its API starts showing the change), at the middle of its whole millisecond, minus the same origin moment; node log times are put on the bench's clock with an offset read where Date.now() ticks over (the median of the last nine readings, one taken before each change). Before each change the bench waited until processes not its own had used under ${pct(quietThreshold)} of the machine for 0.5 s; "others" is their share from that wait to the end of the change (median / max).`)
  blocks.push(`Command: \`${facts.command}\``)
  blocks.push(`Date: ${facts.date} · Node ${process.version} · ${cores} cores · 1-min load average before the run: ${facts.load}`)
  blocks.push(
    [
      '| nodes | change | rounds polled + unpolled | API, to every node p50 / p99 / max ms | API per receiver p50 / p99 ms | logs, polled rounds p50 / p99 / max ms | logs, unpolled rounds p50 / p99 / max ms | bracket p50 / p99 ms | origin p50 / p99 ms | others |',
      '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...results.flatMap((result) => rows(result)),
    ].join('\n'),
  )
  const lines: string[] = []
  const item = (text: string) => lines.push(wrap(`- ${text}`, '  '))
  const of = (result: FleetResult, kind: Kind, polled?: boolean) => result.samples.filter((sample) => sample.kind === kind && (polled === undefined || sample.polled === polled))
  const three = results.find((result) => result.size === 3)
  if (three) {
    const apiP99 = percentile(of(three, 'hold', true).map((sample) => sample.api), 0.99)
    const logsP99 = percentile(of(three, 'hold').map((sample) => sample.logs), 0.99)
    item(`Budget (design.md): a hold seen by every node of a 3-node fleet within 250 ms p99: ${apiP99 <= 250 && logsP99 <= 250 ? 'met' : 'not met'} (API p99 ${ms(apiP99)} ms; logs p99 over all rounds ${ms(logsP99)} ms).`)
  }
  for (const result of results) {
    const polledHolds = of(result, 'hold', true)
    const apiP50 = percentile(polledHolds.map((sample) => sample.api), 0.5)
    const bracketP50 = percentile(polledHolds.flatMap((sample) => sample.widths), 0.5)
    const unpolledHolds = of(result, 'hold', false)
    const notByGossip = result.samples.reduce((sum, sample) => sum + sample.notByGossip, 0)
    const inconsistent = result.samples.reduce((sum, sample) => sum + sample.inconsistent, 0)
    const parts = [
      `processes answering ${(result.launchMs / 1000).toFixed(1)} s after launch, full membership ${(result.membershipMs / 1000).toFixed(1)} s later; the idle fleet (with the idle bench) used ${pct(result.idleShares.own)} of the machine`,
      `polling ran at ${Math.round(result.pollsPerSecond)} polls/s over the fleet, round trip p50 ${ms(percentile(result.pollRtts, 0.5))} / p99 ${ms(percentile(result.pollRtts, 0.99))} ms`,
      `the refused request placed the hold p50 ${ms(percentile(unpolledHolds.map((sample) => sample.originAfterSend), 0.5))} / p99 ${ms(percentile(unpolledHolds.map((sample) => sample.originAfterSend), 0.99))} ms after it was sent, and its answer came back p50 ${ms(percentile(unpolledHolds.map((sample) => sample.answerAfterSend), 0.5))} / p99 ${ms(percentile(unpolledHolds.map((sample) => sample.answerAfterSend), 0.99))} ms after it was sent (unpolled rounds; polled: hold p99 ${ms(percentile(polledHolds.map((sample) => sample.originAfterSend), 0.99))} ms, answer p99 ${ms(percentile(polledHolds.map((sample) => sample.answerAfterSend), 0.99))} ms)`,
      notByGossip === 0 ? 'every merge came by gossip' : `${notByGossip} merges came from anti-entropy or a join pull, not gossip`,
      inconsistent === 0 ? 'brackets and log times never contradicted each other' : `${inconsistent} times a bracket and a log time did not overlap (see holds-raw.json)`,
      result.failures.length === 0 ? 'no failed round' : `${result.failures.length} failed rounds (${result.failures.join('; ')})`,
      `waited ${(result.quietSpentMs / 1000).toFixed(0)} s in all for quiet${result.quietGaveUp ? ', then gave up: others were busy, numbers skewed' : ''}`,
    ]
    item(`${result.size} nodes: ${parts.join('; ')}.`)
    if (bracketP50 > apiP50 / 2) item(`Resolution at ${result.size} nodes: the API brackets (p50 ${ms(bracketP50)} ms) are about as wide as the propagation they time (API p50 ${ms(apiP50)} ms), so the API columns place each arrival only to within about half a bracket; the logs columns (1 ms steps) are the sharper figure.`)
    const costs = (['hold', 'release'] as const).flatMap((kind) => {
      const polledP99 = percentile(of(result, kind, true).map((sample) => sample.logs), 0.99)
      const unpolledP99 = percentile(of(result, kind, false).map((sample) => sample.logs), 0.99)
      return polledP99 > 1.5 * unpolledP99 && polledP99 - unpolledP99 > 5 ? [`${kind} ${ms(polledP99)} ms against ${ms(unpolledP99)} ms`] : []
    })
    if (costs.length > 0) item(`Polling costs at ${result.size} nodes: with ${Math.round(result.pollsPerSecond)} polls/s on ${cores} cores, the logs p99 in polled rounds is ${costs.join(', ')} in the unpolled rounds (the largest bracket, ${ms(largest(of(result, 'hold', true).concat(of(result, 'release', true)).flatMap((sample) => sample.widths)))} ms, is a node that answered no poll for that long); the unpolled rounds are the fleet's own figure.`)
  }
  if (results.some((result) => of(result, 'hold', true).length < 100)) item("p99 is nearest-rank: with fewer than 100 samples in a cell it is that cell's largest sample, the same as max.")
  blocks.push(lines.join('\n'))
  return blocks.join('\n\n')
}

function writeReadme(text: string) {
  const begin = '<!-- holds:begin -->'
  const end = '<!-- holds:end -->'
  const current = readFileSync(readmePath, 'utf8')
  const from = current.indexOf(begin)
  const to = current.indexOf(end)
  if (from < 0 || to < from) {
    console.log(`bench/README.md has no ${begin} ... ${end} markers: not written`)
    return
  }
  writeFileSync(readmePath, `${current.slice(0, from + begin.length)}\n${text}\n${current.slice(to)}`)
  console.log('wrote bench/README.md (between the holds markers)')
}

// ---------------------------------------------------------------- main

async function main() {
  mkdirSync(resultsDir, { recursive: true })
  const load = loadavg()[0]!.toFixed(2)
  const date = new Date().toISOString()
  const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-holds-bench-'))
  cleanups.push(async () => rmSync(stateDir, { recursive: true, force: true }))

  const pgDataDir = join(benchDir, '.switchboard', 'holds', 'postgres')
  console.log('starting PostgreSQL and the simulator')
  const database = await ensureDatabase({
    databaseUrl: process.env.SWITCHBOARD_DATABASE_URL ?? process.env.DATABASE_URL,
    dataDir: pgDataDir,
    port: await freePort(),
  })
  cleanups.push(() => database.release())
  if (database.embedded) pgDataDirForCpu = pgDataDir
  const simulator = await startSimulatorProcess()
  children.add(simulator.child)
  cleanups.push(async () => {
    const exited = new Promise<void>((resolveExit) => {
      if (simulator.child.exitCode !== null || simulator.child.signalCode !== null) resolveExit()
      else simulator.child.once('exit', () => resolveExit())
    })
    simulator.child.kill('SIGTERM')
    const force = setTimeout(() => simulator.child.kill('SIGKILL'), 5_000)
    await exited
    clearTimeout(force)
    children.delete(simulator.child)
  })
  const rules = await fetch(`${simulator.url}/_sim/rules`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify([{ key: REFUSED_KEY, fault: 'invalid_api_key' }]) })
  if (!rules.ok) throw new Error(`the simulator refused the rules: ${rules.status} ${await rules.text()}`)

  const results: FleetResult[] = []
  for (const [index, size] of sizes.entries()) {
    checkRunDeadline()
    results.push(await runFleet(size, roundsFor(index), database, simulator.url, stateDir))
  }
  const command = `node --import tsx bench/fleet/holds.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`
  const text = section(results, { date, load, command })
  console.log(`\n${text}\n`)
  writeFileSync(join(resultsDir, 'holds-raw.json'), `${JSON.stringify({ command, date, load, intervalMs, perNode, warmupRounds, quietThreshold, results }, null, 1)}\n`)
  if (unparsedLines > 0) console.log(`(${unparsedLines} node log lines were not JSON: split across pipe reads)`)
  if (!values['no-readme']) writeReadme(text)
}

let exitCode = 0
try {
  await main()
} catch (error) {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error)
  exitCode = 1
} finally {
  await cleanup()
}
process.exit(exitCode)
