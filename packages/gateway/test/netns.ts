/**
 * Real network separation for multi-process tests: network namespaces joined by veth pairs
 * to bridges the test creates, links cut by setting them down. Needs root and iproute2
 * (`ip`, `bridge`); `netnsSupport()` says why not when they are missing. Everything made is
 * named with a per-run prefix and removed by `teardown()`, and a later run sweeps what a
 * killed run left behind.
 *
 * Two bridges: `fleet` carries libp2p between the namespaces (the one a partition cuts);
 * `service` joins each namespace to the host only (its ports are isolated from each other),
 * for the test's HTTP calls, the simulator and Postgres, so a node cut from the fleet still
 * reaches Postgres.
 */
import { execFileSync } from 'node:child_process'
import { createServer, connect, type Server } from 'node:net'
import { isRunning } from '../../store/src/embedded/processes.ts'

const PREFIX = 'sb18'

/** Null when namespaces can be made here; otherwise why not. */
export function netnsSupport(): string | null {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces and veth pairs)'
  const probe = `${PREFIX}probe${process.pid % 100_000}`
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'pipe' })
    execFileSync('ip', ['netns', 'delete', probe], { stdio: 'pipe' })
    execFileSync('bridge', ['-V'], { stdio: 'pipe' })
    return null
  } catch (error) {
    return `needs iproute2 (ip netns, bridge) able to create namespaces: ${String((error as Error).message).split('\n')[0]}`
  }
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'pipe' })
}

/** A namespace on both bridges. */
export interface Namespace {
  name: string
  /** Its address on the fleet bridge (libp2p). */
  fleetIp: string
  /** Its address on the service bridge (HTTP from the test). */
  serviceIp: string
  /** The host side of its fleet link: set down to cut it off from the fleet. */
  fleetLink: string
}

/** The namespaces of one test run. */
export interface Network {
  namespaces: Namespace[]
  /** The host's address on the service bridge (simulator, Postgres proxy). */
  hostIp: string
  cut(namespace: Namespace): void
  heal(namespace: Namespace): void
  /** Forwards `hostIp:port` to `127.0.0.1:target` (Postgres listens on loopback only). */
  forward(target: number): Promise<number>
  teardown(): void
}

/** Removes what runs whose process is gone left behind. */
function sweep(): void {
  const mine = `${PREFIX}x${process.pid}`
  const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').map((line) => line.split(' ')[0]!).filter((name) => name.startsWith(`${PREFIX}x`))
  for (const name of namespaces) {
    const owner = Number(name.slice(PREFIX.length + 1).split('n')[0])
    if (name.startsWith(mine) || isRunning(owner)) continue
    try {
      ip('netns', 'delete', name)
    } catch {
      // already gone
    }
  }
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).split('\n').map((line) => /^\d+: ([^:@]+)/.exec(line)?.[1]).filter((name): name is string => name !== undefined && name.startsWith(PREFIX) && /^sb18[fs]\d+/.test(name))
  for (const link of links) {
    const owner = Number(/^sb18[fs](\d+)/.exec(link)?.[1])
    if (owner === process.pid % 100_000 || isRunning(owner)) continue
    try {
      ip('link', 'delete', link)
    } catch {
      // already gone
    }
  }
}

/** Creates `count` namespaces on a fleet bridge and a service bridge. */
export function createNetwork(count: number): Network {
  sweep()
  const id = process.pid % 100_000
  // Subnets from the pid, so two runs on one machine do not collide.
  const second = 100 + (process.pid % 100)
  const third = Math.floor(process.pid / 100) % 256
  const fleetBridge = `sb18f${id}`
  const serviceBridge = `sb18s${id}`
  const made: { namespaces: string[]; links: string[] } = { namespaces: [], links: [] }
  const servers: Server[] = []
  const teardown = () => {
    for (const server of servers) server.close()
    for (const name of made.namespaces) {
      try {
        ip('netns', 'delete', name)
      } catch {
        // already gone
      }
    }
    for (const link of made.links) {
      try {
        ip('link', 'delete', link)
      } catch {
        // a veth goes with its namespace end
      }
    }
  }
  try {
    for (const [bridge, address] of [
      [fleetBridge, `10.${second}.${third}.1/25`],
      [serviceBridge, `10.${second}.${third}.129/25`],
    ] as const) {
      // Bridged frames skip iptables (br_netfilter is loaded on these machines): a FORWARD
      // policy of DROP, as a Docker engine leaves it, would otherwise cut the fleet at random.
      ip('link', 'add', bridge, 'type', 'bridge', 'nf_call_iptables', '0', 'nf_call_ip6tables', '0', 'nf_call_arptables', '0')
      made.links.push(bridge)
      ip('addr', 'add', address, 'dev', bridge)
      ip('link', 'set', bridge, 'up')
    }
    const namespaces: Namespace[] = []
    for (let index = 0; index < count; index++) {
      const name = `${PREFIX}x${process.pid}n${index}`
      ip('netns', 'add', name)
      made.namespaces.push(name)
      ip('-n', name, 'link', 'set', 'lo', 'up')
      const fleetLink = `sb18f${id}v${index}`
      const serviceLink = `sb18s${id}v${index}`
      const fleetIp = `10.${second}.${third}.${10 + index}`
      const serviceIp = `10.${second}.${third}.${140 + index}`
      for (const [link, bridge, inside, address] of [
        [fleetLink, fleetBridge, 'fleet0', `${fleetIp}/25`],
        [serviceLink, serviceBridge, 'service0', `${serviceIp}/25`],
      ] as const) {
        ip('link', 'add', link, 'type', 'veth', 'peer', 'name', inside, 'netns', name)
        made.links.push(link)
        ip('link', 'set', link, 'master', bridge)
        ip('link', 'set', link, 'up')
        ip('-n', name, 'addr', 'add', address, 'dev', inside)
        ip('-n', name, 'link', 'set', inside, 'up')
      }
      // Namespaces reach the host on the service bridge, never each other.
      execFileSync('bridge', ['link', 'set', 'dev', serviceLink, 'isolated', 'on'], { stdio: 'pipe' })
      namespaces.push({ name, fleetIp, serviceIp, fleetLink })
    }
    const hostIp = `10.${second}.${third}.129`
    return {
      namespaces,
      hostIp,
      cut: (namespace) => ip('link', 'set', namespace.fleetLink, 'down'),
      heal: (namespace) => ip('link', 'set', namespace.fleetLink, 'up'),
      forward: (target) =>
        new Promise((resolve, reject) => {
          const server = createServer((incoming) => {
            const outgoing = connect(target, '127.0.0.1')
            incoming.pipe(outgoing).pipe(incoming)
            incoming.on('error', () => outgoing.destroy())
            outgoing.on('error', () => incoming.destroy())
          })
          servers.push(server)
          server.once('error', reject)
          server.listen(0, hostIp, () => resolve((server.address() as { port: number }).port))
        }),
      teardown,
    }
  } catch (error) {
    teardown()
    throw error
  }
}
