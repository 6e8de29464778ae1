/**
 * `node scripts/soak.mjs`: the soak run of issue 18. A local fleet (three nodes by default)
 * on the rough day under steady load for 30 minutes, one node SIGKILLed every minute and
 * brought back; every 10 s each live node's RSS, open descriptors and event-loop delay are
 * sampled. The report: the chaos run's tables (every request answered, no hold lost or
 * resurrected), then the resources in 5-minute windows and whether they stayed flat (growth
 * under 10 % after a 2-minute warm-up). Exit 0 when every verdict holds, 1 when one fails, 2
 * for bad options, 130 after Ctrl-C.
 */
import { writeFileSync } from 'node:fs'
import { runChaos } from '../chaos/chaos.ts'
import { commandOf, parseCommandLine, runAndExit, startFreshLocalFleet, stopOnSignal } from '../chaos/cli.ts'
import { renderReport } from '../chaos/report.ts'
import { flatness, renderWindows, sampleNode, windows, type ResourceSample } from './sample.ts'

const usage = 'usage: node scripts/soak.mjs [--nodes 3] [--duration 1800] [--kill-every 60] [--rate 10] [--sample-every 10] [--port 18810] [--seed N] [--json file]'
const { common, number } = parseCommandLine(usage, { duration: 1800, killEvery: 60, rate: 10, minDurationS: 60, minKillEveryS: 5 }, { 'sample-every': { type: 'string', default: '10' } })
const sampleEveryMs = number('sample-every', 1, 60) * 1000
const signal = stopOnSignal('soak')

await runAndExit(
  () => startFreshLocalFleet('soak', common.nodes, common.basePort),
  async (fleet) => {
    const samples: ResourceSample[] = []
    const startedAt = Date.now()
    const sampler = setInterval(() => {
      const at = Date.now()
      void Promise.all(
        fleet.nodes.map(async (node) => {
          const pid = node.pid?.()
          if (pid === undefined) return
          const sample = await sampleNode(node.nodeId, pid, node.url, at)
          if (sample) samples.push(sample)
        }),
      )
    }, sampleEveryMs)
    const { durationMs, killEveryMs, ratePerSecond, seed } = common
    const result = await runChaos(fleet, { durationMs, killEveryMs, pauseMs: 1_000, ratePerSecond, seed, requestTimeoutMs: 30_000, signal, log: (line) => console.log(line) })
    clearInterval(sampler)
    const flat = flatness(samples, startedAt, result.finishedAt)
    console.log(`\n${renderReport(result, commandOf('scripts/soak.mjs'))}`)
    console.log(`\n### Resources per live node, sampled every ${sampleEveryMs / 1000} s (${samples.length} samples)\n`)
    console.log(renderWindows(windows(samples, startedAt)))
    const percent = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(1)} %`
    console.log(
      `\nProcesses past a ${flat.warmupMin}-minute warm-up (their own, and the run's): median RSS ${percent(flat.rssGrowthPercent)} and median open descriptors ${percent(flat.fdsGrowthPercent)} from the first 5 minutes after warm-up to the last 5 (${flat.compared.early} and ${flat.compared.late} samples): ${flat.passed ? 'flat (under 10 %)' : 'NOT flat'}. ` +
        `Over every sample, young processes included: RSS ${percent(flat.allSamples.rssGrowthPercent)}, descriptors ${percent(flat.allSamples.fdsGrowthPercent)}.`,
    )
    if (common.json) writeFileSync(common.json, `${JSON.stringify({ result, samples, flatness: flat }, null, 2)}\n`)
    return result.stoppedEarly ? 130 : result.verdict.passed && flat.passed ? 0 : 1
  },
  'Stopping what the soak started...',
)
