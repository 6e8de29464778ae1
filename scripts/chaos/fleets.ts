/**
 * The fleets a chaos run can shake: a local one it starts itself (real gateway processes on
 * loopback, the simulator playing the rough day, a fresh demo database), or a compose fleet
 * someone already runs, whose nodes it kills with `docker compose kill` and brings back with
 * `docker compose start`.
 */
import { spawn } from 'node:child_process'
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { parse } from 'yaml'
import { ensureDatabase } from '@switchboard/store'
import { freshDatabase, launchFleet, ROUGH_DAY_RULES, roughDayConfig, startSimulatorProcess, type FleetNode } from '@switchboard/test-kit'
import { adminGet, type AdminAccess } from './observe.ts'

/** One node the run can kill and bring back. */
export interface ChaosNode {
  nodeId: string
  url: string
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>
  /** Starts it again with the same identity; resolves once it answers HTTP. */
  start(): Promise<void>
  /** Called when the node exits without being killed by the run. */
  onCrash(listener: (detail: string) => void): void
  /** The process id of a local node while it runs (the soak run samples it); undefined for a compose node. */
  pid?(): number | undefined
}

/** A fleet under test. */
export interface FleetUnderTest {
  nodes: ChaosNode[]
  simulatorUrl: string
  access: AdminAccess
  /** Values of `env.NAME` key references, to know the keys' suffixes. */
  keyEnv: Record<string, string>
  /** Stops whatever the run started (nothing, for a compose fleet). */
  stop(): Promise<void>
}

export interface LocalFleetInit {
  nodes: number
  /** The Postgres server to create the run's database on; default the embedded one (or DATABASE_URL). */
  serverUrl?: string
  /** Name of the run's database; dropped and created fresh. */
  databaseName: string
  /** Drop the database when the run stops (tests); the CLI keeps it for a look afterwards. */
  dropDatabase?: boolean
  stateDir: string
  /** Where the embedded Postgres lives when no server URL is given. */
  embeddedDir: string
  /** HTTP port of the first node, the others counting up; default free ports. */
  basePort?: number
}

/** Starts the simulator with the rough day's rules and a local fleet on a fresh database. */
export async function startLocalFleet(init: LocalFleetInit): Promise<FleetUnderTest> {
  const cleanups: (() => Promise<unknown> | unknown)[] = []
  const stop = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve().then(cleanup).catch((error: unknown) => console.error(error))
  }
  try {
    mkdirSync(join(init.stateDir, 'logs'), { recursive: true })
    const server = await ensureDatabase({ databaseUrl: init.serverUrl ?? process.env.SWITCHBOARD_DATABASE_URL ?? process.env.DATABASE_URL, dataDir: init.embeddedDir })
    cleanups.push(() => server.release())
    const databaseUrl = await freshDatabase(server.url, init.databaseName)
    if (init.dropDatabase) cleanups.push(() => dropDatabase(server.url, init.databaseName))
    const simulator = await startSimulatorProcess()
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          if (simulator.child.exitCode !== null || simulator.child.signalCode !== null) return resolve()
          simulator.child.once('exit', () => resolve())
          simulator.child.kill('SIGTERM')
        }),
    )
    const rules = await fetch(`${simulator.url}/_sim/rules`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ROUGH_DAY_RULES) })
    if (!rules.ok) throw new Error(`the simulator refused the rough day's rules: ${rules.status} ${await rules.text()}`)
    const configFile = join(init.stateDir, 'config.json')
    writeFileSync(configFile, `${JSON.stringify(roughDayConfig(simulator.url), null, 2)}\n`)
    const regions = ['eu', 'us']
    const specs = Array.from({ length: init.nodes }, (_, index) => ({ nodeId: `node-${index + 1}`, region: regions[index === init.nodes - 1 && init.nodes > 1 ? 1 : 0]! }))
    const fleet = await launchFleet({
      nodes: specs,
      configFile,
      databaseUrl,
      fleetSecret: randomBytes(24).toString('hex'),
      stateDir: init.stateDir,
      ...(init.basePort ? { basePort: init.basePort } : {}),
      env: { LOG_LEVEL: 'info' },
      onLine: (nodeId, line) => appendFileSync(join(init.stateDir, 'logs', `${nodeId}.log`), `${line}\n`),
    })
    const quiet = { stopping: false }
    cleanups.push(() => {
      quiet.stopping = true
      return fleet.stop()
    })
    return { nodes: fleet.nodes.map((node) => localNode(node, quiet)), simulatorUrl: simulator.url, access: {}, keyEnv: {}, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** `quiet.stopping` turns off crash reports while the run stops the fleet itself. */
function localNode(node: FleetNode, quiet: { stopping: boolean }): ChaosNode {
  const listeners: ((detail: string) => void)[] = []
  let killing = false
  const watch = () => {
    node.child?.once('exit', (code, signal) => {
      if (!killing && !quiet.stopping) for (const listener of listeners) listener(`exited by itself (code ${code}, signal ${signal})`)
    })
  }
  watch()
  return {
    nodeId: node.nodeId,
    url: node.url,
    async kill() {
      killing = true
      await node.kill('SIGKILL')
    },
    async start() {
      killing = false
      await node.start()
      watch()
    },
    onCrash: (listener) => listeners.push(listener),
    pid: () => (node.running ? node.child?.pid : undefined),
  }
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  } finally {
    await client.end()
  }
}

export interface ComposeFleetInit {
  /** The nodes' published URLs (compose: http://127.0.0.1:8080,8081,8082). */
  urls: string[]
  simulatorUrl: string
  composeFile: string
  access: AdminAccess
}

/**
 * Attaches to a running compose fleet. Each node's compose service is its node id (as
 * docker-compose.yml names them); a node is killed with `docker compose kill -s SIGKILL` and
 * brought back with `docker compose start`, then waited for on /health.
 */
export async function attachComposeFleet(init: ComposeFleetInit): Promise<FleetUnderTest> {
  await requireDockerEngine()
  const nodes = await Promise.all(
    init.urls.map(async (url) => {
      const view = (await adminGet(url, '/api/cluster', init.access)) as { node: { node_id: string } }
      return composeNode(view.node.node_id, url, init.composeFile)
    }),
  )
  return { nodes, simulatorUrl: init.simulatorUrl, access: init.access, keyEnv: composeKeyEnv(init.composeFile, nodes[0]?.nodeId), stop: async () => {} }
}

function composeNode(service: string, url: string, composeFile: string): ChaosNode {
  return {
    nodeId: service,
    url,
    kill: () => docker(['compose', '-f', composeFile, 'kill', '-s', 'SIGKILL', service]),
    async start() {
      await docker(['compose', '-f', composeFile, 'start', service])
      const deadline = Date.now() + 120_000
      while (Date.now() < deadline) {
        const healthy = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) }).then(
          (response) => response.status === 200,
          () => false,
        )
        if (healthy) return
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
      throw new Error(`${service} did not answer /health within 120 s of docker compose start`)
    },
    // Compose restarts crashed containers itself (restart: unless-stopped); nothing to watch here.
    onCrash: () => {},
  }
}

/** The environment docker-compose.yml gives `service`, to resolve the config's `env.NAME` keys. */
function composeKeyEnv(composeFile: string, service: string | undefined): Record<string, string> {
  if (service === undefined) return {}
  const document = parse(readFileSync(composeFile, 'utf8'), { merge: true }) as { services?: Record<string, { environment?: Record<string, unknown> }> }
  const environment = document.services?.[service]?.environment ?? {}
  return Object.fromEntries(Object.entries(environment).map(([name, value]) => [name, String(value)]))
}

/** Fails with a plain message unless a Docker engine answers (there is none on this machine). */
async function requireDockerEngine(): Promise<void> {
  try {
    await docker(['info', '--format', '{{.ServerVersion}}'])
    await docker(['compose', 'version'])
  } catch (error) {
    throw new Error(`--compose needs the docker CLI with the compose plugin and a running Docker engine, and this machine has none reachable.\n${error instanceof Error ? error.message : String(error)}`)
  }
}

function docker(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('docker', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (data: Buffer) => (output += data.toString()))
    child.stderr.on('data', (data: Buffer) => (output += data.toString()))
    child.once('error', (error) => reject(new Error(`docker ${args.join(' ')}: ${error.message}`)))
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve()
      else reject(new Error(`docker ${args.join(' ')} exited with ${code}: ${output.trim().split('\n').slice(0, 3).join(' ')}`))
    })
  })
}
