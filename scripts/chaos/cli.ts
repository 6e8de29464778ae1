/**
 * What the chaos run and the soak run share as command lines: the options both take
 * (`--nodes --duration --kill-every --rate --seed --port --json --help`), their range checks
 * (exit 2 with the usage), Ctrl-C (a first one stops the run early and still reports, a second
 * quits), a fresh local fleet under `.switchboard/<name>/`, and the run's exit code.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { MAX_DURATION_MS } from './chaos.ts'
import { startLocalFleet, type FleetUnderTest } from './fleets.ts'

export const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))

type Options = NonNullable<ParseArgsConfig['options']>

/** Defaults of the shared options; each run has its own. */
export interface CommonDefaults {
  duration: number
  killEvery: number
  rate: number
}

/** The shared options, checked. */
export interface CommonOptions {
  nodes: number
  durationMs: number
  killEveryMs: number
  ratePerSecond: number
  seed: number
  /** HTTP port of the first local node; undefined: free ports. */
  basePort: number | undefined
  json: string | undefined
}

/** A checked command line: the shared options, the run's own raw values, and a number checker for them. */
export interface CommandLine {
  common: CommonOptions
  values: Record<string, string | boolean | undefined>
  number(name: string, low: number, high: number): number
}

/**
 * Parses `argv` with the shared options plus `own`; prints the usage and exits 0 on `--help`,
 * exits 2 with the usage on an unknown option or a number out of range.
 */
export function parseCommandLine(usage: string, defaults: CommonDefaults & { minDurationS: number; minKillEveryS: number }, own: Options, argv = process.argv.slice(2)): CommandLine {
  let values: Record<string, string | boolean | undefined>
  try {
    values = parseArgs({
      args: argv,
      options: {
        nodes: { type: 'string', default: '3' },
        duration: { type: 'string', default: String(defaults.duration) },
        'kill-every': { type: 'string', default: String(defaults.killEvery) },
        rate: { type: 'string', default: String(defaults.rate) },
        seed: { type: 'string' },
        port: { type: 'string' },
        json: { type: 'string' },
        help: { type: 'boolean', default: false },
        ...own,
      },
    }).values as Record<string, string | boolean | undefined>
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage}`)
    process.exit(2)
  }
  if (values.help === true) {
    console.log(usage)
    process.exit(0)
  }
  const number = (name: string, low: number, high: number): number => {
    const text = String(values[name])
    const value = Number(text)
    if (text.trim() === '' || !Number.isFinite(value) || value < low || value > high) {
      console.error(`--${name} must be a number from ${low} to ${high} (got "${text}")\n${usage}`)
      process.exit(2)
    }
    return value
  }
  const common: CommonOptions = {
    nodes: number('nodes', 2, 9),
    durationMs: number('duration', defaults.minDurationS, MAX_DURATION_MS / 1000) * 1000,
    killEveryMs: number('kill-every', defaults.minKillEveryS, 600) * 1000,
    ratePerSecond: number('rate', 1, 200),
    seed: values.seed === undefined ? Date.now() % 1_000_000 : number('seed', 0, 2 ** 32 - 1),
    basePort: values.port === undefined ? undefined : number('port', 1024, 65_000),
    json: typeof values.json === 'string' ? values.json : undefined,
  }
  return { common, values, number }
}

/** The command as typed, for the report. */
export function commandOf(script: string, argv = process.argv.slice(2)): string {
  return [`node ${script}`, ...argv].join(' ')
}

/** An abort signal a first Ctrl-C (or SIGTERM) fires; a second exits at once with 130. */
export function stopOnSignal(what: string): AbortSignal {
  const controller = new AbortController()
  let interrupted = 0
  const onSignal = () => {
    if (++interrupted > 1) process.exit(130)
    console.error(`\nStopping the ${what} early (Ctrl-C again to quit without cleaning up)...`)
    controller.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return controller.signal
}

/** A local fleet on a fresh database `switchboard_<name>`, its state (node logs) under `.switchboard/<name>/`. */
export async function startFreshLocalFleet(name: string, nodes: number, basePort: number | undefined): Promise<FleetUnderTest> {
  const stateDir = join(root, '.switchboard', name)
  rmSync(stateDir, { recursive: true, force: true })
  mkdirSync(stateDir, { recursive: true })
  console.log(`Starting ${nodes} nodes, the simulator and a fresh database switchboard_${name} (node logs in .switchboard/${name}/logs)...`)
  return startLocalFleet({ nodes, databaseName: `switchboard_${name}`, stateDir, embeddedDir: join(root, '.switchboard', 'postgres'), ...(basePort ? { basePort } : {}) })
}

/**
 * Runs `body` against the fleet `start` brings up, stops that fleet whatever happens, and
 * exits with `body`'s code (2 when the run could not start or threw).
 */
export async function runAndExit(start: () => Promise<FleetUnderTest>, body: (fleet: FleetUnderTest) => Promise<number>, stopping = 'Stopping what the run started...'): Promise<never> {
  let fleet: FleetUnderTest | undefined
  let code = 2
  try {
    fleet = await start()
    code = await body(fleet)
  } catch (error) {
    console.error(error instanceof Error ? error.message : error)
  } finally {
    if (fleet) {
      console.log(stopping)
      await fleet.stop()
    }
  }
  process.exit(code)
}
