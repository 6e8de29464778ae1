/**
 * One chaos run (issue 7, item 5): load on the live nodes of a fleet while a random node is
 * SIGKILLed every few seconds and brought back after a short pause, for a bounded time; then
 * the verdicts of held-traffic.ts and restarts.ts on what was observed. Only one node is down at a time, so a
 * restarted node always has a peer to pull the holds from.
 */
import { DEMO_MODELS, seededRandom } from '@switchboard/test-kit'
import { judgeHeldTraffic, PROPAGATION_GRACE_MS, type HeldTrafficVerdict, type KeyFacts } from './held-traffic.ts'
import { judgeRestart, targetId, type ListedHold, type RestartObservation, type RestartVerdict } from './restarts.ts'
import type { ChaosNode, FleetUnderTest } from './fleets.ts'
import { adminGet, collectUpstreamLog, configuredKeys, listed, resetUpstreamLog, watchHolds, type WatchedNode } from './observe.ts'
import { startTraffic, type NodeTally, type UnansweredSample } from './traffic.ts'

/** The longest run anyone can ask for. */
export const MAX_DURATION_MS = 30 * 60_000

export interface ChaosOptions {
  durationMs: number
  killEveryMs: number
  /** How long a killed node stays down before it is started again. */
  pauseMs: number
  ratePerSecond: number
  seed: number
  /** A request with no answer after this long counts as unanswered. */
  requestTimeoutMs: number
  /** Where progress lines go (the CLI prints them; tests keep them). */
  log?: (line: string) => void
  /** Aborts the run early (Ctrl-C); what was observed so far is still judged. */
  signal?: AbortSignal
}

/** A start that failed, or a node that died on its own. */
export interface NodeIncident {
  nodeId: string
  at: number
  what: string
}

/** Everything a run measured, and its verdicts. */
export interface ChaosResult {
  startedAt: number
  finishedAt: number
  /** The run was aborted before its time was up. */
  stoppedEarly: boolean
  options: Omit<ChaosOptions, 'log' | 'signal'>
  nodes: string[]
  traffic: Record<string, NodeTally>
  unanswered: UnansweredSample[]
  restarts: RestartVerdict[]
  heldTraffic: HeldTrafficVerdict
  incidents: NodeIncident[]
  /** True when the simulator's log overflowed between two fetches (a request count may be low). */
  upstreamLogGap: boolean
  keys: KeyFacts[]
  /** The three promises of issue 7, and nodes that crashed, would not start again or never formed a fleet. */
  verdict: { holdsLost: number; holdsResurrected: number; earlyRequests: number; unanswered: number; unclear: number; incidents: number; passed: boolean }
}

interface NodeState {
  node: ChaosNode
  up: boolean
  incarnation: number
  kills: number[]
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}

/** Waits (bounded) until every node lists every other one as a member; names the nodes that never did. */
async function awaitMembership(fleet: FleetUnderTest, timeoutMs: number): Promise<NodeIncident[]> {
  const deadline = Date.now() + timeoutMs
  const incidents: NodeIncident[] = []
  for (const node of fleet.nodes) {
    while (true) {
      const members = await adminGet(node.url, '/api/cluster', fleet.access).then(
        (view) => (view as { members: unknown[] }).members.length,
        () => 0,
      )
      if (members >= fleet.nodes.length) break
      if (Date.now() > deadline) {
        incidents.push({ nodeId: node.nodeId, at: Date.now(), what: `saw ${members} of ${fleet.nodes.length} members after ${timeoutMs / 1000} s; the run went on without a formed fleet` })
        break
      }
      await sleep(250)
    }
  }
  return incidents
}

/** How old the fleet's last hold snapshot in Postgres is, as `node` reports it; null when unknown. */
async function snapshotAge(fleet: FleetUnderTest, node: ChaosNode): Promise<number | null> {
  try {
    const view = (await adminGet(node.url, '/api/cluster', fleet.access, 3_000)) as { last_snapshot: { taken_at: string } | null }
    return view.last_snapshot ? Date.now() - Date.parse(view.last_snapshot.taken_at) : null
  } catch {
    return null
  }
}

/** Runs the chaos against `fleet` (already up) and judges it. The caller stops the fleet. */
export async function runChaos(fleet: FleetUnderTest, options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => {})
  const durationMs = Math.min(options.durationMs, MAX_DURATION_MS)
  const random = seededRandom(options.seed)
  const states: NodeState[] = fleet.nodes.map((node) => ({ node, up: true, incarnation: 1, kills: [] }))
  const incidents: NodeIncident[] = []
  for (const state of states) {
    state.node.onCrash((what) => {
      if (!state.up) return
      state.up = false
      incidents.push({ nodeId: state.node.nodeId, at: Date.now(), what })
      log(`! ${state.node.nodeId} ${what}`)
    })
  }
  const watched = (state: NodeState): WatchedNode => ({ nodeId: state.node.nodeId, url: state.node.url, incarnation: state.incarnation })
  const live = () => states.filter((state) => state.up)

  // A fleet that never forms is a finding, not a reason to stop: the verdicts will show what it costs.
  incidents.push(...(await awaitMembership(fleet, 60_000)))
  const keys = await configuredKeys(fleet.nodes[0]!.url, fleet.access, fleet.keyEnv)
  await resetUpstreamLog(fleet.simulatorUrl)
  const startedAt = Date.now()
  const upstream = collectUpstreamLog(fleet.simulatorUrl, 3_000)
  const holds = watchHolds(() => live().map(watched), fleet.access, 500)
  const traffic = startTraffic({
    targets: () => live().map((state) => ({ nodeId: state.node.nodeId, url: state.node.url })),
    models: DEMO_MODELS,
    ratePerSecond: options.ratePerSecond,
    durationMs,
    maxRequests: Math.ceil((durationMs / 1000) * options.ratePerSecond),
    streamEvery: 5,
    timeoutMs: options.requestTimeoutMs,
    killedDuring: (nodeId, from, to) => states.some((state) => state.node.nodeId === nodeId && state.kills.some((at) => at >= from && at <= to)),
  })
  log(`load: ${options.ratePerSecond} requests/s over the live nodes for ${durationMs / 1000} s; a SIGKILL every ${options.killEveryMs / 1000} s`)

  /** Every live node's holds now (a node that does not answer is left out). */
  const pollFleet = async (among: NodeState[]): Promise<Record<string, ListedHold[]>> => {
    const views = await Promise.all(among.map(async (state) => [state.node.nodeId, await holds.pollNow(watched(state), 3_000).then(listed, () => null)] as const))
    return Object.fromEntries(views.filter((view): view is readonly [string, ListedHold[]] => view[1] !== null))
  }

  /** Starts a node, then polls its holds before it takes load; null when it would not start. */
  const bringBack = async (state: NodeState): Promise<ListedHold[] | null> => {
    try {
      await state.node.start()
    } catch (error) {
      incidents.push({ nodeId: state.node.nodeId, at: Date.now(), what: `did not start again: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}` })
      return null
    }
    state.incarnation++
    let after: ListedHold[] | null = null
    for (let tries = 0; tries < 20 && after === null; tries++) {
      after = await holds.pollNow(watched(state), 3_000).then(listed, () => null)
      if (after === null) await sleep(250)
    }
    state.up = true
    return after ?? []
  }

  const restarts: RestartObservation[] = []
  let upstreamError: unknown
  const runUntil = startedAt + durationMs
  let nextKill = startedAt + options.killEveryMs
  try {
    while (Date.now() < runUntil && !options.signal?.aborted) {
      await sleep(Math.min(nextKill, runUntil) - Date.now(), options.signal)
      if (Date.now() >= runUntil || options.signal?.aborted) break
      // A node that crashed or would not start gets another start before anyone else is killed.
      const down = states.find((state) => !state.up)
      if (down) {
        log(`starting ${down.node.nodeId} again`)
        await bringBack(down)
        nextKill = Math.max(nextKill + options.killEveryMs, Date.now() + 1_000)
        continue
      }
      const victim = states[Math.floor(random() * states.length)]!
      const [before, snapshotAgeMs] = await Promise.all([pollFleet(live()), snapshotAge(fleet, victim.node)])
      const killedAt = Date.now()
      victim.up = false
      victim.kills.push(killedAt)
      await victim.node.kill()
      log(`${((killedAt - startedAt) / 1000).toFixed(1)} s: SIGKILL ${victim.node.nodeId} (holding ${before[victim.node.nodeId]?.length ?? '?'}, fleet ${new Set(Object.values(before).flat().map((hold) => JSON.stringify([hold.provider, hold.keyId, hold.model]))).size})`)
      await sleep(options.pauseMs)
      const after = await bringBack(victim)
      if (after === null) continue
      const backAt = Date.now()
      const peersAfter = await pollFleet(live().filter((state) => state !== victim))
      // A hold only the restarted node lists: poll it again a grace later, in case a peer released it between the polls.
      const peerTargets = new Set(Object.values(peersAfter).flat().map(targetId))
      let afterSettled: ListedHold[] | undefined
      if (after.some((hold) => !peerTargets.has(targetId(hold)))) {
        await sleep(PROPAGATION_GRACE_MS)
        afterSettled = await holds.pollNow(watched(victim), 3_000).then(listed, () => undefined)
      }
      restarts.push({ nodeId: victim.node.nodeId, killedAt, backAt, before, after, peersAfter, snapshotAgeMs, ...(afterSettled ? { afterSettled } : {}) })
      log(`${((backAt - startedAt) / 1000).toFixed(1)} s: ${victim.node.nodeId} back after ${((backAt - killedAt) / 1000).toFixed(1)} s, holding ${after.length}`)
      nextKill = Math.max(nextKill + options.killEveryMs, Date.now() + 1_000)
    }
  } finally {
    traffic.stop()
    await traffic.done
    // Nobody stays down: a node still down (a start failed) gets one last try.
    for (const state of states) if (!state.up) await bringBack(state)
    await holds.stop()
    // The log's last fetch: stopped here too, so a failed run leaves no loop behind.
    await upstream.stop().catch((error: unknown) => {
      upstreamError = error
    })
  }
  if (upstreamError !== undefined) throw upstreamError
  const finishedAt = Date.now()

  const heldTraffic = judgeHeldTraffic({ observations: holds.observations, records: upstream.records, keys })
  const restartVerdicts = restarts.map((restart) => judgeRestart(restart))
  const tallies = Object.fromEntries(traffic.tallies)
  const sum = (pick: (tally: NodeTally) => number) => Object.values(tallies).reduce((total, tally) => total + pick(tally), 0)
  const verdict = {
    holdsLost: restartVerdicts.reduce((total, restart) => total + restart.lost.length, 0),
    holdsResurrected: restartVerdicts.reduce((total, restart) => total + restart.resurrected, 0),
    earlyRequests: heldTraffic.early.length,
    unanswered: sum((tally) => tally.noAnswer),
    unclear: sum((tally) => tally.unclear),
    incidents: incidents.length,
    passed: false,
  }
  verdict.passed = verdict.holdsLost === 0 && verdict.holdsResurrected === 0 && verdict.earlyRequests === 0 && verdict.unanswered === 0 && verdict.unclear === 0 && verdict.incidents === 0
  const { log: _log, signal: _signal, ...recorded } = options
  return {
    startedAt,
    finishedAt,
    stoppedEarly: options.signal?.aborted ?? false,
    options: { ...recorded, durationMs },
    nodes: states.map((state) => state.node.nodeId),
    traffic: tallies,
    unanswered: traffic.samples,
    restarts: restartVerdicts,
    heldTraffic,
    incidents,
    upstreamLogGap: upstream.gap,
    keys,
    verdict,
  }
}
