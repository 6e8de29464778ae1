/**
 * `node scripts/chaos.mjs`: the chaos run of issue 7 against a local fleet it starts (or,
 * with --compose, a running compose fleet), then the report. Exit code 0 when every verdict
 * holds, 1 when one fails, 2 for bad options or a run that could not start, 130 after Ctrl-C
 * (the report of what ran is still printed).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { MAX_DURATION_MS, runChaos } from './chaos.ts'
import { attachComposeFleet, startLocalFleet, type FleetUnderTest } from './fleets.ts'
import { renderReport } from './report.ts'

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const usage = `usage: node scripts/chaos.mjs [--nodes 3] [--duration 60] [--kill-every 8] [--pause 1] [--rate 20] [--seed N] [--json file]
       node scripts/chaos.mjs --compose [--urls http://127.0.0.1:8080,http://127.0.0.1:8081,http://127.0.0.1:8082]
         [--simulator-url http://127.0.0.1:8090] [--admin-token demo-admin-token] [--compose-file docker-compose.yml] [...]`

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    duration: { type: 'string', default: '60' },
    'kill-every': { type: 'string', default: '8' },
    pause: { type: 'string', default: '1' },
    rate: { type: 'string', default: '20' },
    seed: { type: 'string' },
    timeout: { type: 'string', default: '30' },
    json: { type: 'string' },
    compose: { type: 'boolean', default: false },
    urls: { type: 'string' },
    'simulator-url': { type: 'string' },
    'admin-token': { type: 'string' },
    'compose-file': { type: 'string', default: join(root, 'docker-compose.yml') },
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
const durationMs = number('duration', values.duration, 5, MAX_DURATION_MS / 1000) * 1000
const killEveryMs = number('kill-every', values['kill-every'], 2, 600) * 1000
const pauseMs = number('pause', values.pause, 0, 60) * 1000
const ratePerSecond = number('rate', values.rate, 1, 200)
const requestTimeoutMs = number('timeout', values.timeout, 1, 300) * 1000
const seed = values.seed === undefined ? Date.now() % 1_000_000 : number('seed', values.seed, 0, 2 ** 32 - 1)

const controller = new AbortController()
let fleet: FleetUnderTest | undefined
let interrupted = 0
const onSignal = () => {
  interrupted++
  if (interrupted > 1) process.exit(130)
  console.error('\nStopping the run early (Ctrl-C again to quit without cleaning up)...')
  controller.abort()
}
process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)

let code = 2
try {
  if (values.compose) {
    // The defaults are the ports docker-compose.yml publishes.
    const urls = values.urls ?? 'http://127.0.0.1:8080,http://127.0.0.1:8081,http://127.0.0.1:8082'
    const simulatorUrl = values['simulator-url'] ?? 'http://127.0.0.1:8090'
    fleet = await attachComposeFleet({
      urls: urls.split(',').map((url) => url.trim().replace(/\/$/, '')),
      simulatorUrl: simulatorUrl.replace(/\/$/, ''),
      composeFile: values['compose-file'],
      access: { token: values['admin-token'] ?? process.env.SWITCHBOARD_ADMIN_TOKENS?.split(',')[0]?.split(':')[0] ?? 'demo-admin-token' },
    })
  } else {
    const stateDir = join(root, '.switchboard', 'chaos')
    rmSync(stateDir, { recursive: true, force: true })
    mkdirSync(stateDir, { recursive: true })
    console.log(`Starting ${nodes} nodes, the simulator and a fresh database switchboard_chaos (node logs in .switchboard/chaos/logs)...`)
    fleet = await startLocalFleet({ nodes, databaseName: 'switchboard_chaos', stateDir, embeddedDir: join(root, '.switchboard', 'postgres') })
  }
  const result = await runChaos(fleet, { durationMs, killEveryMs, pauseMs, ratePerSecond, seed, requestTimeoutMs, signal: controller.signal, log: (line) => console.log(line) })
  const command = ['node scripts/chaos.mjs', ...process.argv.slice(2)].join(' ')
  console.log(`\n${renderReport(result, command)}`)
  if (values.json) {
    writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`)
    console.log(`\nRaw numbers: ${values.json}`)
  }
  code = result.stoppedEarly ? 130 : result.verdict.passed ? 0 : 1
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
} finally {
  if (fleet) {
    console.log('Stopping what the run started...')
    await fleet.stop()
  }
}
process.exit(code)
