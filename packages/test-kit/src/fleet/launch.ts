/**
 * A local fleet of gateway processes on loopback: used by `npm start`, the chaos run and the
 * benches. Each node is a real `switchboard serve` process with its own node id, region, p2p
 * port and data dir, all sharing one Postgres and one fleet secret.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
// The gateway's bin, not its package entry: a node runs the bundle, built once here for every node.
import { ensureBundle } from '../../../gateway/bin/compiled.mjs'
import { freePort } from '../ports.ts'

/** The repository's root: nodes run from it, as `npm start` does. */
const root = resolve(fileURLToPath(new URL('../../../..', import.meta.url)))
const gatewayBin = join(root, 'packages/gateway/bin/switchboard.js')
const simulatorBin = join(root, 'packages/simulator/bin/simulator.js')

export interface FleetNodeSpec {
  nodeId: string
  region: string
}

export interface LaunchInit {
  nodes: FleetNodeSpec[]
  configFile: string
  databaseUrl: string
  fleetSecret: string
  /** HTTP port of the first node; the others count up. 0 = free ports. */
  basePort?: number
  /** Where node data dirs and logs go. */
  stateDir: string
  /** Extra environment for every node (LOG_LEVEL, admin tokens). */
  env?: NodeJS.ProcessEnv
  /** Called with each line a node prints (for logs). */
  onLine?: (nodeId: string, line: string) => void
  /** Called when a running node exits without `kill` asking it to (a crash, an outside SIGKILL). */
  onExit?: (node: FleetNode, detail: { code: number | null; signal: NodeJS.Signals | null }) => void
}

/** One running node of the fleet. */
export interface FleetNode {
  nodeId: string
  region: string
  httpPort: number
  p2pPort: number
  readonly url: string
  /** The running process; replaced by `restart`. */
  readonly child: ChildProcess | null
  /** Sends a signal and waits for the process to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>
  /** Starts the node again with the same identity, ports and data dir. */
  start(): Promise<void>
  readonly running: boolean
}

export interface LocalFleet {
  nodes: FleetNode[]
  stop(): Promise<void>
}

/** Starts every node (in parallel) and resolves once each answers. */
export async function launchFleet(init: LaunchInit): Promise<LocalFleet> {
  // Once here rather than in every node starting at the same moment (each would build its own).
  if (process.env.SWITCHBOARD_FROM_SOURCE !== '1') await ensureBundle()
  const ports = await Promise.all(
    init.nodes.map(async (_, index) => ({
      http: init.basePort ? init.basePort + index : await freePort(),
      p2p: await freePort(),
    })),
  )
  const nodes = init.nodes.map((spec, index) => createNode(spec, ports[index]!, ports, init))
  try {
    await Promise.all(nodes.map((node) => node.start()))
  } catch (error) {
    await Promise.all(nodes.map((node) => node.kill('SIGKILL')))
    throw error
  }
  return {
    nodes,
    async stop() {
      await Promise.all(nodes.map((node) => node.kill('SIGTERM')))
    },
  }
}

function createNode(spec: FleetNodeSpec, own: { http: number; p2p: number }, all: { http: number; p2p: number }[], init: LaunchInit): FleetNode {
  const dataDir = join(init.stateDir, 'nodes', spec.nodeId)
  mkdirSync(dataDir, { recursive: true })
  let child: ChildProcess | null = null
  /** Set while `kill` stops the process on purpose: that exit is not reported. */
  let stopping = false
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: 'info',
    // Three nodes on one machine: one event loop each unless the caller says otherwise (a node's own default is one per core).
    SWITCHBOARD_WORKERS: '1',
    ...init.env,
    SWITCHBOARD_NODE_ID: spec.nodeId,
    SWITCHBOARD_REGION: spec.region,
    SWITCHBOARD_P2P_PORT: String(own.p2p),
    SWITCHBOARD_PEERS: all.filter((ports) => ports !== own).map((ports) => `127.0.0.1:${ports.p2p}`).join(','),
    SWITCHBOARD_FLEET_SECRET: init.fleetSecret,
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_DATABASE_URL: init.databaseUrl,
    // A launcher killed too hard to stop its nodes does not leave them running.
    SWITCHBOARD_EXIT_WITH_PARENT: '1',
  }
  const node: FleetNode = {
    nodeId: spec.nodeId,
    region: spec.region,
    httpPort: own.http,
    p2pPort: own.p2p,
    url: `http://127.0.0.1:${own.http}`,
    get child() {
      return child
    },
    get running() {
      return child !== null && child.exitCode === null && child.signalCode === null
    },
    async kill(signal = 'SIGTERM') {
      const current = child
      if (current === null || current.exitCode !== null || current.signalCode !== null) return
      const exited = new Promise<void>((resolveExit) => current.once('exit', () => resolveExit()))
      stopping = true
      current.kill(signal)
      const force = setTimeout(() => current.kill('SIGKILL'), 25_000)
      await exited
      clearTimeout(force)
    },
    start() {
      stopping = false
      return new Promise<void>((resolveStart, reject) => {
        const started = spawn(process.execPath, [gatewayBin, 'serve', '--config', init.configFile, '--port', String(own.http)], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
        child = started
        let output = ''
        let ready = false
        const timer = setTimeout(() => reject(new Error(`${spec.nodeId} did not start within 60 s:\n${output.slice(-4000)}`)), 60_000)
        const onData = (data: Buffer) => {
          const text = data.toString()
          if (!ready) output += text
          for (const line of text.split('\n')) if (line.trim() !== '') init.onLine?.(spec.nodeId, line)
          if (!ready && output.includes('switchboard listening on')) {
            ready = true
            clearTimeout(timer)
            resolveStart()
          }
        }
        started.stdout!.on('data', onData)
        started.stderr!.on('data', onData)
        started.once('exit', (code, signal) => {
          if (!ready) {
            clearTimeout(timer)
            reject(new Error(`${spec.nodeId} exited with ${code} before it was ready:\n${output.slice(-4000)}`))
          } else if (!stopping && child === started) init.onExit?.(node, { code, signal })
        })
      })
    },
  }
  return node
}

/** The simulator in its own process; resolves with its URL. */
export function startSimulatorProcess(port = 0): Promise<{ url: string; child: ChildProcess }> {
  return new Promise((resolveStart, reject) => {
    const child = spawn(process.execPath, [simulatorBin, '--port', String(port)], { cwd: root, env: { ...process.env, SWITCHBOARD_EXIT_WITH_PARENT: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const onData = (data: Buffer) => {
      output += data.toString()
      const match = output.match(/simulator listening on (http:\/\/\S+)/)
      if (match) resolveStart({ url: match[1]!, child })
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => reject(new Error(`simulator exited with ${code}:\n${output}`)))
  })
}

/** Drops and creates `name` on the server of `serverUrl`; returns the new database's URL. */
export async function freshDatabase(serverUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a safe database name: ${name}`)
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await client.query(`CREATE DATABASE ${name}`)
  } finally {
    await client.end()
  }
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.toString()
}
