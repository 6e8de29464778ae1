/**
 * `npm start`: a local fleet (three nodes in two regions by default; `--nodes N`) on the
 * embedded Postgres, the simulator playing a rough day, and a light load generator; prints
 * each node's URL. A node that dies is reported and started again. Ctrl-C stops everything
 * it started (once, however many signals arrive); starting again at once works.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { databaseAnswers, ensureDatabase, type DatabaseHandle } from '@switchboard/store'
import { DEMO_MODELS, freshDatabase, launchFleet, ROUGH_DAY_RULES, roughDayConfig, startSimulatorProcess, type FleetNode, type LocalFleet } from '@switchboard/test-kit'
import { loadLine, startLoad, type LoadTally } from './load.ts'

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    port: { type: 'string', default: process.env.PORT ?? '8080' },
    'no-load': { type: 'boolean', default: false },
    'load-minutes': { type: 'string', default: '10' },
  },
})
const count = Number(values.nodes)
if (!Number.isInteger(count) || count < 1 || count > 20) {
  console.error(`--nodes must be a whole number from 1 to 20 (got "${values.nodes}")`)
  process.exit(2)
}
// SWITCHBOARD_STATE_DIR moves the fleet's files (embedded Postgres, node dirs) elsewhere; tests use it.
const stateDir = resolve(process.env.SWITCHBOARD_STATE_DIR ?? join(root, '.switchboard'))
mkdirSync(stateDir, { recursive: true })

let fleet: LocalFleet | undefined
let stopping = false
const cleanups: (() => Promise<void> | void)[] = []
async function stop(code: number): Promise<void> {
  // Ctrl-C sends SIGINT to the whole group; a second Ctrl-C or a SIGTERM while stopping must
  // not cut the cleanup short (the nodes' last snapshots, the embedded Postgres and its lock).
  if (stopping) {
    console.log('Still stopping the fleet...')
    return
  }
  stopping = true
  console.log('\nStopping the fleet...')
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch((error: unknown) => console.error(error))
  process.exit(code)
}
process.on('SIGINT', () => void stop(0))
process.on('SIGTERM', () => void stop(0))

/** A node that died is started again: after 1 s, doubling to 30 s while it keeps dying within a minute. */
const restartDelays = new Map<string, { delayMs: number; lastStart: number }>()
function restart(node: FleetNode, detail: { code: number | null; signal: NodeJS.Signals | null }): void {
  if (stopping) return
  const previous = restartDelays.get(node.nodeId)
  const delayMs = previous && Date.now() - previous.lastStart < 60_000 ? Math.min(previous.delayMs * 2, 30_000) : 1_000
  console.log(`[${node.nodeId}] exited unexpectedly (${detail.signal ? `signal ${detail.signal}` : `code ${detail.code}`}); starting it again in ${delayMs / 1000} s`)
  const timer = setTimeout(() => {
    if (stopping) return
    const began = Date.now()
    restartDelays.set(node.nodeId, { delayMs, lastStart: began })
    node.start().then(
      () => console.log(`[${node.nodeId}] is back on ${node.url} (started in ${((Date.now() - began) / 1000).toFixed(1)} s)`),
      (error: unknown) => {
        console.log(`[${node.nodeId}] did not start again: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
        restart(node, { code: null, signal: null })
      },
    )
  }, delayMs)
  timer.unref()
}

/**
 * The embedded Postgres, should it die, is started again on its data directory and port, so the
 * nodes (serving from memory and keeping their rows meanwhile) reconnect by themselves. Checked
 * every 2 s; two checks unanswered in a row start it (a busy server may miss one).
 */
function watchDatabase(first: DatabaseHandle): void {
  let server = first
  cleanups.push(() => server.release())
  let misses = 0
  let checking = false
  const timer = setInterval(() => {
    if (stopping || checking) return
    checking = true
    void (async () => {
      if (await databaseAnswers(server.url)) misses = 0
      else if (++misses >= 2 && !stopping) {
        console.log('[postgres] the embedded PostgreSQL is not answering; starting it again if it is gone')
        const began = Date.now()
        const previous = server
        server = await ensureDatabase({ dataDir: join(stateDir, 'postgres') })
        await previous.release()
        misses = 0
        const moved = new URL(server.url).port !== new URL(previous.url).port ? ` on another port (${new URL(server.url).port}): restart npm start` : ''
        console.log(`[postgres] is back${moved} (in ${((Date.now() - began) / 1000).toFixed(1)} s)`)
      }
    })()
      .catch((error: unknown) => console.log(`[postgres] could not start it again: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`))
      .finally(() => (checking = false))
  }, 2_000)
  timer.unref()
  cleanups.push(() => clearInterval(timer))
}

try {
  // The simulator starts while Postgres does (a restart at once after Ctrl-C is that much sooner).
  const simulatorStarting = startSimulatorProcess()
  simulatorStarting.then(
    (started) => cleanups.push(() => void started.child.kill('SIGTERM')),
    () => {},
  )
  const server = await ensureDatabase({ databaseUrl: process.env.SWITCHBOARD_DATABASE_URL ?? process.env.DATABASE_URL, dataDir: join(stateDir, 'postgres') })
  if (server.embedded) watchDatabase(server)
  else cleanups.push(() => server.release())
  // The demo gets a database of its own, fresh each start, so it always shows the same rough day.
  const database = { ...server, url: await freshDatabase(server.url, 'switchboard_demo') }
  const simulator = await simulatorStarting
  await fetch(`${simulator.url}/_sim/rules`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ROUGH_DAY_RULES) })
  const configFile = join(stateDir, 'demo-config.json')
  writeFileSync(configFile, `${JSON.stringify(roughDayConfig(simulator.url), null, 2)}\n`)
  const regions = ['eu', 'us']
  const specs = Array.from({ length: count }, (_, index) => ({ nodeId: `node-${index + 1}`, region: regions[index === count - 1 && count > 1 ? 1 : 0]! }))
  fleet = await launchFleet({
    nodes: specs,
    configFile,
    databaseUrl: database.url,
    fleetSecret: process.env.SWITCHBOARD_FLEET_SECRET ?? randomBytes(24).toString('hex'),
    basePort: Number(values.port),
    stateDir,
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
    onExit: restart,
    onLine: (nodeId, line) => {
      if (line.includes('"level":40') || line.includes('"level":50')) {
        try {
          const parsed = JSON.parse(line) as { msg?: string }
          console.log(`[${nodeId}] ${parsed.msg ?? line}`)
        } catch {
          console.log(`[${nodeId}] ${line}`)
        }
      }
    },
  })
  const running = fleet
  cleanups.push(() => running.stop())
  const first = running.nodes[0]!
  console.log(`
Switchboard fleet is running: ${count} node${count === 1 ? '' : 's'} on the embedded Postgres (${database.embedded ? '.switchboard/postgres' : 'DATABASE_URL'}).
${running.nodes.map((node) => `  ${node.nodeId} (${node.region})  ${node.url}`).join('\n')}
  simulator        ${simulator.url}   (rules at ${simulator.url}/_sim/rules)

Dashboard: ${first.url}/  (held keys, routes, settings, providers, cluster; every node serves it)

The simulator plays a rough day: OpenAI key prod-2-revoked is revoked, prod-3-busy is on a
30 requests/minute limit, Azure is slow, Anthropic's backup-no-credit is out of credit,
Amazon Bedrock's claude-sonnet-4-5 is down all day (the bare model moves to Anthropic and
Vertex AI), and Vertex key gcp-prod lost access to gemini-2.5-pro (held on that model only).

  curl -s ${first.url}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}'

  curl -s ${first.url}/api/adaptive-routing/conditions     # held keys (the same on every node)
  curl -s ${first.url}/api/adaptive-routing/routes         # weights and states
  curl -s ${first.url}/api/cluster                         # members, regions, leaders

Any OpenAI SDK works with base URL ${first.url}/v1. Ctrl-C stops everything.`)

  if (!values['no-load']) {
    const minutes = Number(values['load-minutes'])
    const load = startLoad({ targets: () => running.nodes.filter((node) => node.running).map((node) => node.url), models: DEMO_MODELS, ratePerSecond: 3, durationMs: minutes * 60_000, maxRequests: minutes * 60 * 3, streamEvery: 5 })
    cleanups.unshift(() => load.stop())
    console.log(`\nA light load (3 requests/s over all nodes) runs for ${minutes} minutes; a summary every 30 s.`)
    let previous = new Map<string, LoadTally>()
    const report = setInterval(() => {
      const { line, seen } = loadLine(running.nodes, load.tallies, previous)
      previous = seen
      console.log(`[load, last 30 s] ${line}`)
    }, 30_000)
    report.unref()
    void load.done.then(() => {
      clearInterval(report)
      console.log('[load] finished; the fleet keeps running until Ctrl-C')
    })
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  await stop(1)
}
