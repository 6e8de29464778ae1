/**
 * History on vs off on the hot path (issue 14): one Switchboard node, one simulator, the
 * same small chat.completions request at fixed concurrency, in ONE run, alternating rounds
 * with history off and on (toggled live through PUT /api/adaptive-routing/config) so both
 * see the same warm process and the same machine: a warm-up of 10,000 requests with both
 * settings, then rounds in the order off, on | on, off | off, on ... (so drift over the run
 * favours neither). Reports the gateway process's CPU ms per
 * request per round and the median of each setting; writes the table into README.md.
 *
 *   node --import tsx bench/recording/history-hot-path.mjs [--requests 6000] [--rounds 3] [--concurrency 32] [--no-readme] [--profile on|off]
 *
 * "other work" is the machine's busy time less this run's own processes (gateway, Postgres,
 * simulator, this load generator), as a share of both cores: above a few % the round was
 * disturbed. `--profile on|off` instead runs the gateway under `node --cpu-prof` with history
 * pinned on or off for every round (profiles in results/history-hot-path/profiles/<on|off>/);
 * such a run's numbers carry the profiler's cost and never go into README.md.
 *
 * Needs nothing from bench/node_modules: the load comes from undici (root workspace).
 */
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'
import { clockTicks, cpuMs, killAllNow, machineBusyMs, startService, stopAll, waitUntilReady } from '../lib/processes.mjs'
import { freePort } from '@switchboard/test-kit'
import { replaceSection } from '../lib/report.mjs'
import { readFileSync, writeFileSync } from 'node:fs'

/** CPU ms the whole machine spent on anything but idle and iowait (interrupts included: processes are charged some of them). */
function machineAllMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  const [user, nice, system, , , irq, softirq, steal] = fields
  return ((user + nice + system + irq + softirq + (steal || 0)) * 1000) / clockTicks
}

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const repoDir = join(benchDir, '..')
const resultsDir = join(benchDir, 'results', 'history-hot-path')
mkdirSync(resultsDir, { recursive: true })
process.on('exit', killAllNow)

const { values } = parseArgs({ options: { requests: { type: 'string', default: '6000' }, rounds: { type: 'string', default: '3' }, concurrency: { type: 'string', default: '32' }, 'no-readme': { type: 'boolean', default: false }, profile: { type: 'string' } } })
if (values.profile !== undefined && values.profile !== 'on' && values.profile !== 'off') throw new Error('--profile takes "on" or "off" (history pinned that way for every round)')
const profile = values.profile ?? null
const profileDir = profile === null ? null : join(resultsDir, 'profiles', profile)
if (profileDir !== null) mkdirSync(profileDir, { recursive: true })
const requests = Math.min(100_000, Math.max(100, Number(values.requests)))
const rounds = Math.min(10, Math.max(1, Number(values.rounds)))
const concurrency = Math.min(256, Math.max(1, Number(values.concurrency)))

const SWITCHES = { direction_selection_enabled: true, route_selection_enabled: true, append_fallbacks_to_pinned: false, reroute_failed_directions: false, prune_failed_fallbacks: false }
const BODY = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })

async function main() {
  const simPort = await freePort()
  const simulator = startService({ name: 'simulator', args: [join(repoDir, 'packages/simulator/bin/simulator.js'), '--port', String(simPort)], logFile: join(resultsDir, 'simulator.log') })
  await waitUntilReady(simulator, async () => (await fetch(`http://127.0.0.1:${simPort}/_sim/rules`)).ok)
  const config = { request_log: { enabled: false }, providers: { openai: { keys: [{ name: 'bench-1', value: 'sk-bench-key-1111', models: ['*'], weight: 1 }, { name: 'bench-2', value: 'sk-bench-key-2222', models: ['*'], weight: 1 }], network_config: { base_url: `http://127.0.0.1:${simPort}` } } } }
  const configFile = join(resultsDir, 'config.json')
  writeFileSync(configFile, JSON.stringify(config))
  const port = await freePort()
  const gateway = startService({
    name: 'switchboard',
    args: [...(profileDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]), join(repoDir, 'packages/gateway/bin/switchboard.js'), 'serve', '--config', configFile, '--port', String(port), '--host', '127.0.0.1'],
    cwd: resultsDir,
    env: { NODE_ENV: 'production', LOG_LEVEL: 'warn', SWITCHBOARD_P2P_PORT: String(await freePort()) },
    logFile: join(resultsDir, 'switchboard.log'),
    graceMs: 15_000,
    helperCommandLine: 'postgres',
  })
  const base = `http://127.0.0.1:${port}`
  await waitUntilReady(gateway, async () => (await fetch(`${base}/health`)).status === 200, { timeoutMs: 90_000 })
  const pool = new Pool(base, { connections: concurrency, pipelining: 1 })
  const setHistory = async (enabled) => {
    const response = await fetch(`${base}/api/adaptive-routing/config`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...SWITCHES, history_enabled: enabled }) })
    if (!response.ok) throw new Error(`could not set history_enabled=${enabled}: ${response.status} ${await response.text()}`)
  }
  const load = async (count) => {
    let next = 0
    let failed = 0
    const worker = async () => {
      while (next < count) {
        next++
        const { statusCode, body } = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY })
        await body.dump()
        if (statusCode !== 200) failed++
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
    return failed
  }
  // Warm-up with both settings, so the JIT has seen both paths before the first measured round.
  for (const enabled of profile === null ? [true, false, true, false] : [profile === 'on']) {
    await setHistory(enabled)
    await load(2_500)
  }
  const rows = []
  for (let round = 0; round < rounds; round++) {
    // Off first in odd rounds, on first in even ones (off, on, on, off, ...): a process that still
    // speeds up or slows down over the run favours neither setting.
    for (const enabled of profile === null ? (round % 2 === 0 ? [false, true] : [true, false]) : [profile === 'on']) {
      await setHistory(enabled)
      await load(500)
      const cpuBefore = cpuMs(gateway)
      const simulatorBefore = cpuMs(simulator)
      const selfBefore = process.cpuUsage()
      const machineBefore = machineBusyMs()
      const allBefore = machineAllMs()
      const started = performance.now()
      const failed = await load(requests)
      const elapsed = performance.now() - started
      const machine = machineBusyMs() - machineBefore
      const all = machineAllMs() - allBefore
      const cpu = cpuMs(gateway)
      const simulatorCpu = cpuMs(simulator)
      const self = process.cpuUsage(selfBefore)
      const ours = cpu.node - cpuBefore.node + (cpu.other - cpuBefore.other) + (simulatorCpu.node + simulatorCpu.other - simulatorBefore.node - simulatorBefore.other) + (self.user + self.system) / 1000
      rows.push({ round: round + 1, enabled, cpuPerRequest: (cpu.node - cpuBefore.node) / requests, postgresPerRequest: (cpu.other - cpuBefore.other) / requests, rps: requests / (elapsed / 1000), failed, machineShare: machine / elapsed / 2, otherShare: Math.max(0, all - ours) / elapsed / 2 })
      console.log(JSON.stringify(rows.at(-1)))
    }
  }
  const metrics = await (await fetch(`${base}/metrics`)).text()
  const dropped = [...metrics.matchAll(/^switchboard_history_dropped_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0)
  const written = [...metrics.matchAll(/^switchboard_history_written_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0)
  await pool.close()
  await stopAll()
  const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]
  if (profile !== null) {
    console.log(`profiled with history ${profile}: ${rows.map((row) => row.cpuPerRequest.toFixed(3)).join(', ')} ms / request (profiler included); profiles in ${profileDir}`)
    return
  }
  const off = median(rows.filter((row) => !row.enabled).map((row) => row.cpuPerRequest))
  const on = median(rows.filter((row) => row.enabled).map((row) => row.cpuPerRequest))
  const fmt = (value, digits = 3) => value.toFixed(digits)
  const table = [
    `Run ${new Date().toISOString().slice(0, 16)}Z, \`node --import tsx bench/recording/history-hot-path.mjs --requests ${requests} --rounds ${rounds} --concurrency ${concurrency}\`, Node ${process.version}, 2 shared cores.`,
    '',
    '| round | history | gateway CPU ms / request | Postgres CPU ms / request | RPS | failed | machine busy | other work on the machine |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map((row) => `| ${row.round} | ${row.enabled ? 'on' : 'off'} | ${fmt(row.cpuPerRequest)} | ${fmt(row.postgresPerRequest)} | ${Math.round(row.rps)} | ${row.failed} | ${Math.round(row.machineShare * 100)} % | ${Math.round(row.otherShare * 100)} % |`),
    '',
    `Median gateway CPU per request: off ${fmt(off)} ms, on ${fmt(on)} ms: **${on >= off ? '+' : ''}${fmt(((on - off) / off) * 100, 1)} %** (budget: within 5 %). History rows written in the run: ${written}, dropped: ${dropped}. Other work on the machine: at most ${Math.round(Math.max(...rows.map((row) => row.otherShare)) * 100)} % of its CPU in any round.`,
  ].join('\n')
  console.log(table)
  if (!values['no-readme']) replaceSection(join(benchDir, 'README.md'), 'history-hot-path', table)
}

main().catch(async (error) => {
  console.error(error)
  await stopAll()
  process.exit(1)
})
