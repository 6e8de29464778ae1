/**
 * How many workers a node runs (issue 38): `--workers N`, or one per core the process may use
 * (its affinity, within a cgroup's CPU quota), at most 8: past that the workers' Postgres pools
 * would take most of a default Postgres's 100 connections.
 */
import { availableParallelism } from 'node:os'
import { readFileSync } from 'node:fs'

export const MAX_DEFAULT_WORKERS = 8
export const MAX_WORKERS = 256

/** The CPUs a cgroup v2 quota allows (`cpu.max` "quota period"), rounded up; null without a quota. */
export function cgroupCpus(cpuMax: string | null): number | null {
  if (cpuMax === null) return null
  const [quota, period] = cpuMax.trim().split(/\s+/)
  if (quota === undefined || quota === 'max' || period === undefined) return null
  const cpus = Number(quota) / Number(period)
  return Number.isFinite(cpus) && cpus > 0 ? Math.ceil(cpus) : null
}

/** The default worker count of this process. */
export function defaultWorkers(cores = availableParallelism(), cpuMax = readCpuMax()): number {
  const quota = cgroupCpus(cpuMax)
  return Math.max(1, Math.min(cores, quota ?? cores, MAX_DEFAULT_WORKERS))
}

/** `--workers` as given: a whole number from 1 to MAX_WORKERS, or `auto`. Returns the count or an error to print. */
export function parseWorkers(text: string | undefined, fallback: () => number = defaultWorkers): number | string {
  if (text === undefined || text === 'auto') return fallback()
  const count = Number(text)
  if (!Number.isInteger(count) || count < 1 || count > MAX_WORKERS) return `--workers must be "auto" or a whole number from 1 to ${MAX_WORKERS} (got "${text}")`
  return count
}

function readCpuMax(): string | null {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8')
  } catch {
    return null
  }
}
