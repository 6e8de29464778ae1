/**
 * The compose fleet of docker-compose.yml as the deploy test drives it: Compose (v1 or v2)
 * under a project name of its own, containers by service, and HTTP only to the ports the
 * file publishes on 127.0.0.1.
 */
import { root } from '../repo.ts'
import type { Engine } from './engine.ts'
import { run, say, sleep, type RunOptions } from './shell.ts'

/** Defaults of docker-compose.yml (nothing is set in the test's environment). */
export const GATEWAY_KEY = 'sk-demo-gateway-key-app'
export const ADMIN_TOKEN = 'demo-admin-token'
/** Host ports docker-compose.yml publishes on 127.0.0.1. */
export const NODE_PORTS: Record<string, number> = { 'node-1': 8080, 'node-2': 8081, 'node-3': 8082 }
export const NODES = Object.keys(NODE_PORTS)

/** An HTTP answer: status and parsed JSON (or text). */
export interface Answer {
  status: number
  body: any
  /** Which worker of a node with workers answered (x-switchboard-worker), null otherwise. */
  worker?: string | null
}

/** A request from the host to 127.0.0.1:port; a connection failure is status 0. */
export async function http(port: number, path: string, init: { method?: string; token?: string; body?: unknown; timeoutMs?: number } = {}): Promise<Answer> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: AbortSignal.timeout(init.timeoutMs ?? 10_000),
    })
    const text = await response.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {}
    return { status: response.status, body, worker: response.headers.get('x-switchboard-worker') }
  } catch {
    return { status: 0, body: null }
  }
}

/** A chat completion through a node, with the gateway key. */
export function chat(port: number, key = GATEWAY_KEY): Promise<Answer> {
  return http(port, '/v1/chat/completions', { token: key, body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the deploy test' }] }, timeoutMs: 20_000 })
}

/** The key names a node holds (GET /api/adaptive-routing/conditions), or undefined when it does not answer. */
export async function heldKeys(port: number): Promise<string[] | undefined> {
  const answer = await http(port, '/api/adaptive-routing/conditions', { token: ADMIN_TOKEN })
  if (answer.status !== 200) return undefined
  return (answer.body.conditions as { key_name: string }[]).map((condition) => condition.key_name).sort()
}

/** docker-compose.yml run by this test's Compose under its own project name. */
export class Fleet {
  constructor(
    readonly engine: Engine,
    readonly project: string,
  ) {}

  /** The compose network every service is on. */
  get network(): string {
    return `${this.project}_default`
  }

  compose(args: readonly string[], options: RunOptions = {}) {
    const [program, ...lead] = this.engine.compose
    return run(program, [...lead, '-p', this.project, '-f', 'docker-compose.yml', ...args], { cwd: root, timeoutMs: 180_000, ...options })
  }

  /** The container id of a service ('' when it has none). */
  async container(service: string): Promise<string> {
    return (await this.compose(['ps', '-q', service], { allowFail: true })).stdout.trim()
  }

  /** `docker inspect` fields of a service's container. */
  async state(service: string): Promise<{ status: string; health: string; pid: number; startedAt: string }> {
    const id = await this.container(service)
    if (id === '') return { status: 'absent', health: 'none', pid: 0, startedAt: '' }
    const inspected = await run('docker', ['inspect', '-f', '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}} {{.State.Pid}} {{.State.StartedAt}}', id], { allowFail: true })
    const [status = 'absent', health = 'none', pid = '0', startedAt = ''] = inspected.stdout.trim().split(' ')
    return { status, health, pid: Number(pid), startedAt }
  }

  /** Waits until every listed service's healthcheck says healthy; returns the seconds it took. */
  async healthy(services: readonly string[], timeoutMs: number): Promise<number> {
    const started = Date.now()
    for (;;) {
      const states = await Promise.all(services.map(async (service) => [service, (await this.state(service)).health] as const))
      if (states.every(([, health]) => health === 'healthy')) return (Date.now() - started) / 1000
      if (Date.now() - started > timeoutMs) {
        const logs = await this.compose(['logs', '--tail', '30', ...states.filter(([, health]) => health !== 'healthy').map(([service]) => service)], { allowFail: true })
        throw new Error(`not healthy after ${timeoutMs / 1000} s: ${states.map(([service, health]) => `${service} ${health}`).join(', ')}\n${logs.stdout.slice(-6000)}`)
      }
      await sleep(500)
    }
  }

  /**
   * Crashes a service's main process with SIGKILL: a crash, which the restart policy
   * answers (`docker kill` counts as a manual stop and would not be restarted). First from
   * inside the container; the kernel ignores a SIGKILL that a pid namespace's init gets from
   * inside its own namespace, so when the process is still there, from the host by its pid.
   */
  async crash(service: string): Promise<string> {
    const before = await this.state(service)
    const id = await this.container(service)
    await run('docker', ['exec', id, 'sh', '-c', 'kill -9 1'], { allowFail: true, timeoutMs: 10_000 })
    await sleep(1_000)
    const after = await this.state(service)
    if (after.startedAt !== before.startedAt || after.pid !== before.pid || after.status !== 'running') return 'kill -9 1 inside the container'
    await run('kill', ['-9', String(before.pid)])
    return `kill -9 of its main process (host pid ${before.pid}): \`docker exec … kill -9 1\` is ignored, PID 1 of a namespace takes no SIGKILL from inside it`
  }

  /** Memory use of each running container of the project (`docker stats`), by service. */
  async memory(): Promise<Record<string, string>> {
    const stats = await run('docker', ['stats', '--no-stream', '--format', '{{.Name}}\t{{.MemUsage}}'])
    const out: Record<string, string> = {}
    for (const line of stats.stdout.trim().split('\n')) {
      const [name = '', usage = ''] = line.split('\t')
      // sbdeploy_node-1_1 (Compose v1) or sbdeploy-node-1-1 (v2).
      if (name.startsWith(this.project)) out[name.slice(this.project.length + 1).replace(/[_-]\d+$/, '')] = usage.split(' / ')[0] ?? usage
    }
    return out
  }

  /** Logs of some services, for a failure message. */
  async logs(services: readonly string[], lines = 40): Promise<string> {
    return (await this.compose(['logs', '--no-color', '--tail', String(lines), ...services], { allowFail: true })).stdout
  }

  async down(options: { volumes: boolean }): Promise<void> {
    say(`${this.engine.compose.join(' ')} down${options.volumes ? ' -v' : ''}`)
    await this.compose(['down', ...(options.volumes ? ['-v'] : []), '--timeout', '40'], { timeoutMs: 240_000 })
  }
}
