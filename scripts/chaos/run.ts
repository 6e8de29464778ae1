/**
 * `node scripts/chaos.mjs`: the chaos run of issue 7 against a local fleet it starts (or,
 * with --compose, a running compose fleet), then the report. Exit code 0 when every verdict
 * holds, 1 when one fails, 2 for bad options or a run that could not start, 130 after Ctrl-C
 * (the report of what ran is still printed).
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runChaos } from './chaos.ts'
import { commandOf, parseCommandLine, root, runAndExit, startFreshLocalFleet, stopOnSignal } from './cli.ts'
import { attachComposeFleet } from './fleets.ts'
import { renderReport } from './report.ts'

const usage = `usage: node scripts/chaos.mjs [--nodes 3] [--duration 60] [--kill-every 8] [--pause 1] [--rate 20] [--seed N] [--port N] [--json file]
       node scripts/chaos.mjs --compose [--urls http://127.0.0.1:8080,http://127.0.0.1:8081,http://127.0.0.1:8082]
         [--simulator-url http://127.0.0.1:8090] [--admin-token demo-admin-token] [--compose-file docker-compose.yml] [...]`

const { common, values, number } = parseCommandLine(
  usage,
  { duration: 60, killEvery: 8, rate: 20, minDurationS: 5, minKillEveryS: 2 },
  {
    pause: { type: 'string', default: '1' },
    timeout: { type: 'string', default: '30' },
    compose: { type: 'boolean', default: false },
    urls: { type: 'string' },
    'simulator-url': { type: 'string' },
    'admin-token': { type: 'string' },
    'compose-file': { type: 'string', default: join(root, 'docker-compose.yml') },
  },
)
const pauseMs = number('pause', 0, 60) * 1000
const requestTimeoutMs = number('timeout', 1, 300) * 1000
const signal = stopOnSignal('run')

const start = async () => {
  if (!values.compose) return startFreshLocalFleet('chaos', common.nodes, common.basePort)
  // The defaults are the ports docker-compose.yml publishes.
  const urls = String(values.urls ?? 'http://127.0.0.1:8080,http://127.0.0.1:8081,http://127.0.0.1:8082')
  const simulatorUrl = String(values['simulator-url'] ?? 'http://127.0.0.1:8090')
  return attachComposeFleet({
    urls: urls.split(',').map((url) => url.trim().replace(/\/$/, '')),
    simulatorUrl: simulatorUrl.replace(/\/$/, ''),
    composeFile: String(values['compose-file']),
    access: { token: String(values['admin-token'] ?? process.env.SWITCHBOARD_ADMIN_TOKENS?.split(',')[0]?.split(':')[0] ?? 'demo-admin-token') },
  })
}

await runAndExit(start, async (fleet) => {
  const { durationMs, killEveryMs, ratePerSecond, seed } = common
  const result = await runChaos(fleet, { durationMs, killEveryMs, pauseMs, ratePerSecond, seed, requestTimeoutMs, signal, log: (line) => console.log(line) })
  console.log(`\n${renderReport(result, commandOf('scripts/chaos.mjs'))}`)
  if (common.json) {
    writeFileSync(common.json, `${JSON.stringify(result, null, 2)}\n`)
    console.log(`\nRaw numbers: ${common.json}`)
  }
  return result.stoppedEarly ? 130 : result.verdict.passed ? 0 : 1
})
