/**
 * `node scripts/soak.mjs`: the soak run of issue 18. A local fleet (three nodes by default)
 * on the rough day under steady load for 30 minutes, one node SIGKILLed every minute and
 * brought back; every 10 s each live node's RSS, open descriptors and event-loop delay are
 * sampled. The report: the chaos run's tables (every request answered, no hold lost or
 * resurrected), then the resources in 5-minute windows and whether they stayed flat (growth
 * under 10 % after a 2-minute warm-up). Exit 0 when every verdict holds, 1 when one fails, 2
 * for bad options, 130 after Ctrl-C.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { MAX_DURATION_MS, runChaos } from '../chaos/chaos.ts'
import { startLocalFleet, type FleetUnderTest } from '../chaos/fleets.ts'
import { renderReport } from '../chaos/report.ts'
import { flatness, renderWindows, sampleNode, windows, type ResourceSample } from './sample.ts'

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const usage = 'usage: node scripts/soak.mjs [--nodes 3] [--duration 1800] [--kill-every 60] [--rate 10] [--sample-every 10] [--port 18810] [--seed N] [--json file]'
const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    duration: { type: 'string', default: '1800' },
    'kill-every': { type: 'string', default: '60' },
    rate: { type: 'string', default: '10' },
    'sample-every': { type: 'string', default: '10' },
    port: { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
})
if (values.help) {
  console.log(usage)
  process.exit(0)
}
function number(name: string, text: string, low: number, high: number): number {
  const value = Number(text)
  if (!Number.isFinite(value) || value < low || value > high) {
    console.error(`--${name} must be a number from ${low} to ${high} (got "${text}")\n${usage}`)
    process.exit(2)
  }
  return value
}
const nodes = number('nodes', values.nodes, 2, 9)
const durationMs = number('duration', values.duration, 60, MAX_DURATION_MS / 1000) * 1000
const killEveryMs = number('kill-every', values['kill-every'], 5, 600) * 1000
const ratePerSecond = number('rate', values.rate, 1, 200)
const sampleEveryMs = number('sample-every', values['sample-every'], 1, 60) * 1000
const basePort = values.port === undefined ? undefined : number('port', values.port, 1024, 65_000)
const seed = values.seed === undefined ? Date.now() % 1_000_000 : number('seed', values.seed, 0, 2 ** 32 - 1)

const controller = new AbortController()
let interrupted = 0
const onSignal = () => {
  if (++interrupted > 1) process.exit(130)
  console.error('\nStopping the soak early (Ctrl-C again to quit without cleaning up)...')
  controller.abort()
}
process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)

let fleet: FleetUnderTest | undefined
let code = 2
try {
  const stateDir = join(root, '.switchboard', 'soak')
  rmSync(stateDir, { recursive: true, force: true })
  mkdirSync(stateDir, { recursive: true })
  console.log(`Starting ${nodes} nodes, the simulator and a fresh database switchboard_soak (node logs in .switchboard/soak/logs)...`)
  fleet = await startLocalFleet({ nodes, databaseName: 'switchboard_soak', stateDir, embeddedDir: join(root, '.switchboard', 'postgres'), ...(basePort ? { basePort } : {}) })
  const running = fleet
  const samples: ResourceSample[] = []
  const startedAt = Date.now()
  const sampler = setInterval(() => {
    const at = Date.now()
    void Promise.all(
      running.nodes.map(async (node) => {
        const pid = node.pid?.()
        if (pid === undefined) return
        const sample = await sampleNode(node.nodeId, pid, node.url, at)
        if (sample) samples.push(sample)
      }),
    )
  }, sampleEveryMs)
  const result = await runChaos(running, { durationMs, killEveryMs, pauseMs: 1_000, ratePerSecond, seed, requestTimeoutMs: 30_000, signal: controller.signal, log: (line) => console.log(line) })
  clearInterval(sampler)
  const command = ['node scripts/soak.mjs', ...process.argv.slice(2)].join(' ')
  const flat = flatness(samples, startedAt, result.finishedAt)
  console.log(`\n${renderReport(result, command)}`)
  console.log(`\n### Resources per live node, sampled every ${sampleEveryMs / 1000} s (${samples.length} samples)\n`)
  console.log(renderWindows(windows(samples, startedAt)))
  console.log(`\nAfter a ${flat.warmupMin}-minute warm-up, median RSS grew ${flat.rssGrowthPercent.toFixed(1)} % and median open descriptors ${flat.fdsGrowthPercent.toFixed(1)} % from the first 5 minutes to the last 5: ${flat.passed ? 'flat (under 10 %)' : 'NOT flat'}.`)
  if (values.json) writeFileSync(values.json, `${JSON.stringify({ result, samples, flatness: flat }, null, 2)}\n`)
  code = result.stoppedEarly ? 130 : result.verdict.passed && flat.passed ? 0 : 1
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
} finally {
  if (fleet) {
    console.log('Stopping what the soak started...')
    await fleet.stop()
  }
}
process.exit(code)
