/**
 * What the soak run samples every 10 s on each live node: resident memory, open file
 * descriptors and the process's age (from /proc) and the event-loop delay (p99 and max over
 * the last 10 s, from the node's own /metrics, which prom-client resets at each scrape); and
 * the summary of it, in 5-minute windows, with the flatness verdict (growth under 10 % after
 * warm-up).
 *
 * Warm-up is the run's first 2 minutes and also each process's own first 2 minutes: a node
 * just started holds about 40 MB more than the same node a minute later (V8 sizes its heap for
 * loading the modules and gives it back after ~90 s), and with a SIGKILL every minute a third
 * of the samples come from such young processes. Medians over all samples then move with how
 * many young processes a window happened to catch (135-162 MB in the first 30-minute run,
 * with no trend), which says nothing about growth; the verdict compares warmed-up processes,
 * and the all-samples figure is reported beside it.
 */
import { readFile, readdir } from 'node:fs/promises'

/** One node at one moment. */
export interface ResourceSample {
  at: number
  nodeId: string
  pid: number
  /** Seconds since the process started (from /proc/<pid>/stat). */
  ageS: number
  rssMb: number
  fds: number
  /** Event-loop delay over the last scrape interval (ms); null when /metrics did not answer. */
  loopP99Ms: number | null
  loopMaxMs: number | null
}

/** Reads one node's sample; undefined when the process is gone. */
export async function sampleNode(nodeId: string, pid: number, url: string, at: number): Promise<ResourceSample | undefined> {
  let status: string
  let fds: number
  let ageS: number
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8')
    fds = (await readdir(`/proc/${pid}/fd`)).length
    ageS = processAgeS(await readFile(`/proc/${pid}/stat`, 'utf8'), await readFile('/proc/uptime', 'utf8'))
  } catch {
    return undefined
  }
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  // A process caught exiting (or a zombie) has no VmRSS: not a sample.
  if (!Number.isFinite(rssKb)) return undefined
  let loopP99Ms: number | null = null
  let loopMaxMs: number | null = null
  try {
    const metrics = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text()
    loopP99Ms = gauge(metrics, 'switchboard_nodejs_eventloop_lag_p99_seconds')
    loopMaxMs = gauge(metrics, 'switchboard_nodejs_eventloop_lag_max_seconds')
  } catch {
    // A node that does not answer /metrics now is sampled without its loop delay.
  }
  return { at, nodeId, pid, ageS, rssMb: rssKb / 1024, fds, loopP99Ms, loopMaxMs }
}

/** Clock ticks per second of /proc/<pid>/stat's start time (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100

/** A process's age in seconds from its /proc/<pid>/stat line and /proc/uptime. */
export function processAgeS(stat: string, uptime: string): number {
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const afterName = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const startTicks = Number(afterName[19])
  const upS = Number(uptime.split(' ')[0])
  if (!Number.isFinite(startTicks) || !Number.isFinite(upS)) throw new Error('unreadable /proc stat')
  return Math.max(0, upS - startTicks / TICKS_PER_SECOND)
}

function gauge(text: string, name: string): number | null {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text)
  return match ? Number(match[1]) * 1000 : null
}

/** One window of the summary. */
export interface SampleWindow {
  fromMin: number
  toMin: number
  samples: number
  rssMedianMb: number
  /** Median RSS of processes at least `warmupMin` old (NaN when the window had none). */
  rssWarmMedianMb: number
  rssMaxMb: number
  fdsMedian: number
  fdsMax: number
  loopP99MedianMs: number | null
  loopMaxMs: number | null
}

/** The flatness verdict: medians of the first window after warm-up against the last window. */
export interface Flatness {
  warmupMin: number
  /** Growth over samples of processes past their own warm-up: the verdict. */
  rssGrowthPercent: number
  fdsGrowthPercent: number
  /** The same over every sample, young processes included (reported, not judged). */
  allSamples: { rssGrowthPercent: number; fdsGrowthPercent: number }
  /** How many samples each side of the comparison had (warmed-up processes only). */
  compared: { early: number; late: number }
  passed: boolean
}

const median = (values: number[]) => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** Groups samples in windows of `windowMin` minutes from `startedAt`. */
export function windows(samples: readonly ResourceSample[], startedAt: number, windowMin = 5, warmupMin = 2): SampleWindow[] {
  const groups = new Map<number, ResourceSample[]>()
  for (const sample of samples) {
    const index = Math.floor((sample.at - startedAt) / (windowMin * 60_000))
    const group = groups.get(index) ?? []
    group.push(sample)
    groups.set(index, group)
  }
  return [...groups.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, group]) => {
      const loops = group.map((sample) => sample.loopP99Ms).filter((value): value is number => value !== null)
      const maxes = group.map((sample) => sample.loopMaxMs).filter((value): value is number => value !== null)
      return {
        fromMin: index * windowMin,
        toMin: (index + 1) * windowMin,
        samples: group.length,
        rssMedianMb: median(group.map((sample) => sample.rssMb)),
        rssWarmMedianMb: median(group.filter((sample) => sample.ageS >= warmupMin * 60).map((sample) => sample.rssMb)),
        rssMaxMb: Math.max(...group.map((sample) => sample.rssMb)),
        fdsMedian: median(group.map((sample) => sample.fds)),
        fdsMax: Math.max(...group.map((sample) => sample.fds)),
        loopP99MedianMs: loops.length > 0 ? median(loops) : null,
        loopMaxMs: maxes.length > 0 ? Math.max(...maxes) : null,
      }
    })
}

/**
 * Growth of the median RSS and descriptor count from the `spanMin` minutes after the run's
 * warm-up to the last `spanMin` minutes, over samples of processes at least `warmupMin` old;
 * flat when both grew under 10 % (and each side had samples to compare).
 */
export function flatness(samples: readonly ResourceSample[], startedAt: number, finishedAt: number, warmupMin = 2, spanMin = 5): Flatness {
  const inEarly = (sample: ResourceSample) => sample.at >= startedAt + warmupMin * 60_000 && sample.at < startedAt + (warmupMin + spanMin) * 60_000
  const inLate = (sample: ResourceSample) => sample.at >= finishedAt - spanMin * 60_000
  const warm = (sample: ResourceSample) => sample.ageS >= warmupMin * 60
  const growth = (early: ResourceSample[], late: ResourceSample[], pick: (sample: ResourceSample) => number) => (median(late.map(pick)) / median(early.map(pick)) - 1) * 100
  const early = samples.filter((sample) => inEarly(sample) && warm(sample))
  const late = samples.filter((sample) => inLate(sample) && warm(sample))
  const rssGrowthPercent = growth(early, late, (sample) => sample.rssMb)
  const fdsGrowthPercent = growth(early, late, (sample) => sample.fds)
  const allEarly = samples.filter(inEarly)
  const allLate = samples.filter(inLate)
  return {
    warmupMin,
    rssGrowthPercent,
    fdsGrowthPercent,
    allSamples: { rssGrowthPercent: growth(allEarly, allLate, (sample) => sample.rssMb), fdsGrowthPercent: growth(allEarly, allLate, (sample) => sample.fds) },
    compared: { early: early.length, late: late.length },
    // NaN (no samples on a side) is not flat: nothing was shown.
    passed: rssGrowthPercent < 10 && fdsGrowthPercent < 10,
  }
}

/** The windows as a markdown table. */
export function renderWindows(rows: readonly SampleWindow[]): string {
  const cell = (value: number | null, digits = 0) => (value === null || !Number.isFinite(value) ? '-' : value.toFixed(digits))
  const lines = [
    '| minutes | samples | RSS median (MB) | RSS median, processes up 2 min or more (MB) | RSS max (MB) | fds median | fds max | event-loop delay p99, median (ms) | event-loop delay max (ms) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((row) => `| ${row.fromMin}-${row.toMin} | ${row.samples} | ${cell(row.rssMedianMb)} | ${cell(row.rssWarmMedianMb)} | ${cell(row.rssMaxMb)} | ${cell(row.fdsMedian)} | ${cell(row.fdsMax)} | ${cell(row.loopP99MedianMs, 1)} | ${cell(row.loopMaxMs)} |`),
  ]
  return lines.join('\n')
}
