/**
 * Multi-process test harness: the simulator and gateway nodes as real child processes on
 * loopback, found by the "listening on" line they print. Every process is killed on stop.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import { createTestDatabase } from '../../store/test/database.ts'

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const simulatorBin = join(root, 'packages/simulator/bin/simulator.js')
const gatewayBin = join(root, 'packages/gateway/bin/switchboard.js')

/** A child process with its collected output. */
export interface RunningProcess {
  child: ChildProcess
  output(): string
  stop(): Promise<void>
}

/** Spawns `node <args>` and resolves once a line matches `ready`, with the match. */
export async function spawnNode(args: string[], ready: RegExp, env: NodeJS.ProcessEnv = {}, timeoutMs = 20_000): Promise<{ process: RunningProcess; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const running: RunningProcess = {
    child,
    output: () => output,
    stop: () => stopChild(child),
  }
  const match = await new Promise<RegExpMatchArray>((resolveMatch, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`process did not become ready within ${timeoutMs} ms: node ${args.join(' ')}\n${output}`))
    }, timeoutMs)
    const onData = (data: Buffer) => {
      output += data.toString()
      const found = output.match(ready)
      if (found) {
        clearTimeout(timer)
        resolveMatch(found)
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`process exited with ${code} before it was ready: node ${args.join(' ')}\n${output}`))
    })
  })
  return { process: running, match }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
  await exited
  clearTimeout(timer)
}

/** The simulator in its own process, with its control API. */
export interface SimulatorProcess {
  url: string
  setRules(rules: unknown[]): Promise<void>
  requests(): Promise<SimulatedRequest[]>
  resetRequests(): Promise<void>
  /** Requests the simulator is holding right now. */
  inFlight(): Promise<number>
  stop(): Promise<void>
}

/** What the simulator recorded of one request it received. */
export interface SimulatedRequest {
  /** When the simulator recorded it (epoch ms, at the end of the request). */
  at: number
  provider: string
  key_suffix: string
  model: string
  stream: boolean
  /** The API path asked, without the query. */
  path?: string
  /** The request asked for a continuation: its conversation ended with the assistant's text. */
  prefill?: boolean
  status: number
  aborted?: boolean
  /** The W3C traceparent the request carried (a gateway that traces sends one per attempt). */
  traceparent?: string
}

export async function startSimulator(): Promise<SimulatorProcess> {
  const { process: running, match } = await spawnNode([simulatorBin, '--port', '0'], /simulator listening on (http:\/\/\S+)/)
  const url = match[1]!
  const control = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    if (!response.ok) throw new Error(`simulator ${method} ${path}: ${response.status} ${await response.text()}`)
    return response
  }
  return {
    url,
    setRules: async (rules) => {
      await control('PUT', '/_sim/rules', rules)
    },
    requests: async () => (await (await control('GET', '/_sim/requests')).json()) as SimulatedRequest[],
    resetRequests: async () => {
      await control('DELETE', '/_sim/requests')
    },
    inFlight: async () => ((await (await control('GET', '/_sim/stats')).json()) as { in_flight: number }).in_flight,
    stop: running.stop,
  }
}

/** A gateway node in its own process. */
export interface GatewayProcess {
  url: string
  /** The config file it was started with (to start it again). */
  configFile: string
  databaseUrl: string
  /** Sends a signal and resolves with the exit code once the process is gone. */
  kill(signal: NodeJS.Signals): Promise<number | null>
  /** The process's pid (a node with workers: its primary's). */
  pid(): number
  output(): string
  stop(): Promise<void>
}

/**
 * Writes `config` to a temp file and starts `switchboard serve` on a free port. Without a
 * database URL in `env`, the node gets a fresh database of its own on the run's Postgres.
 */
export async function startGateway(config: unknown, env: NodeJS.ProcessEnv = {}, readyTimeoutMs = 60_000): Promise<GatewayProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'sb-gateway-'))
  const file = join(dir, 'config.json')
  await writeFile(file, JSON.stringify(config, null, 2))
  const database = env.SWITCHBOARD_DATABASE_URL === undefined ? await createTestDatabase() : undefined
  const databaseEnv = database ? { SWITCHBOARD_DATABASE_URL: database.url } : {}
  const { process: running, match } = await spawnNode([gatewayBin, 'serve', '--config', file, '--port', '0'], /switchboard listening on (http:\/\/[\d.:]+)/, { LOG_LEVEL: 'info', ...databaseEnv, ...env }, readyTimeoutMs)
  return {
    url: match[1]!,
    configFile: file,
    databaseUrl: database?.url ?? env.SWITCHBOARD_DATABASE_URL!,
    kill: (signal) => killChild(running.child, signal),
    pid: () => running.child.pid!,
    output: running.output,
    stop: async () => {
      await running.stop()
      await database?.drop()
    },
  }
}

/** A config with one openai provider on the simulator and two keys for every model: `revoked` (first) and `healthy`. */
export function revokedAndHealthyConfig(simulatorUrl: string, revoked: string, healthy: string) {
  return {
    providers: {
      openai: {
        keys: [
          { name: 'revoked', value: revoked, models: ['*'], weight: 1 },
          { name: 'healthy', value: healthy, models: ['*'], weight: 1 },
        ],
        network_config: { base_url: simulatorUrl },
      },
    },
  }
}

/**
 * Between tests of one fleet: no simulator rules, no recorded requests, no held keys
 * (refusals in one test must not shape the next).
 */
export async function freshRound(simulator: SimulatorProcess, gateway: GatewayProcess): Promise<void> {
  await simulator.setRules([])
  await simulator.resetRequests()
  const cleared = await fetch(`${gateway.url}/api/adaptive-routing/conditions/clear`, { method: 'POST' })
  expect(cleared.status).toBe(200)
}

/** One chat request for `model` to a gateway at `url`; resolves with the answer's status (body read). */
export async function chatStatus(url: string, model = 'openai/gpt-4o-mini'): Promise<number> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(20_000),
  })
  await response.arrayBuffer()
  return response.status
}

/**
 * Sends requests with `send` until `held()` says the refused key is held (the balancer tried it);
 * at most 60, then throws naming `where`.
 */
export async function sendUntilHeld(send: () => Promise<unknown>, held: () => Promise<boolean>, where: string): Promise<number> {
  for (let index = 0; index < 60; index++) {
    await send()
    if (await held()) return Date.now()
  }
  throw new Error(`the revoked key was never tried on ${where}`)
}

/** Runs the CLI to completion and returns its exit code and output. */
export async function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [gatewayBin, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()))
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()))
  const code = await new Promise<number | null>((resolveCode) => child.once('exit', (exitCode) => resolveCode(exitCode)))
  return { code, stdout, stderr }
}

/** Writes a file into a fresh temp dir and returns its path. */
export async function tempFile(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sb-file-'))
  const file = join(dir, name)
  await writeFile(file, text)
  return file
}

/** Starts `switchboard serve` again on an existing config file (a restart keeps its env: node id, data dir). */
export async function restartGateway(configFile: string, env: NodeJS.ProcessEnv): Promise<GatewayProcess> {
  const { process: running, match } = await spawnNode([gatewayBin, 'serve', '--config', configFile, '--port', '0'], /switchboard listening on (http:\/\/[\d.:]+)/, { LOG_LEVEL: 'info', ...env }, 60_000)
  return {
    url: match[1]!,
    configFile,
    databaseUrl: env.SWITCHBOARD_DATABASE_URL!,
    kill: (signal) => killChild(running.child, signal),
    pid: () => running.child.pid!,
    output: running.output,
    stop: running.stop,
  }
}

/** Sends a signal and resolves with the exit code once the process is gone. */
function killChild(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)))
  child.kill(signal)
  return exited
}

/** An answer of a node with workers: which worker sent it. */
export interface WorkerAnswer {
  status: number
  worker: number
  json: Record<string, any>
}

/** One request on a connection of its own (so round robin picks the worker). */
export function sendOnce(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<WorkerAnswer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const outgoing = request(`${url}${path}`, { method, agent: false, headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers }, timeout: 20_000 }, (incoming) => {
      let text = ''
      incoming.setEncoding('utf8')
      incoming.on('data', (chunk: string) => (text += chunk))
      incoming.on('end', () => resolve({ status: incoming.statusCode!, worker: Number(incoming.headers['x-switchboard-worker']), json: text === '' ? {} : (JSON.parse(text) as Record<string, any>) }))
    })
    outgoing.on('timeout', () => outgoing.destroy(new Error(`${method} ${path} timed out`)))
    outgoing.on('error', reject)
    outgoing.end(payload)
  })
}

/** Sends until worker `worker` answers (round robin gets there within a few); bounded. */
export async function onWorker(worker: number, attempt: () => Promise<WorkerAnswer>): Promise<WorkerAnswer> {
  for (let tries = 0; tries < 20; tries++) {
    const answer = await attempt()
    if (answer.worker === worker) return answer
  }
  throw new Error(`worker ${worker} never answered`)
}

