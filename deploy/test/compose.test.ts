/**
 * docker-compose.yml, checked offline (no Docker engine here): three gateway nodes in two
 * regions wired to each other, to Postgres and to the simulator; volumes for the p2p
 * identities and the database; a config.json the gateway accepts, pointing at the
 * simulator; healthchecks behind every depends_on; node-1 on host port 8080.
 */
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../packages/gateway/src/config/load.ts'
import { parseRules } from '../../packages/simulator/src/rules/validate.ts'
import { composeFile, configEnvReferences, envNamesOfFlag, exists, gatewayEnvReads, gatewayFlags, gatewayGetRoutes, interpolate, readText, shutdownBoundSeconds, type Yaml } from './repo.ts'

/** Flags the compose nodes deliberately leave at the gateway's default. Empty: every flag is set. */
const FLAGS_LEFT_AT_DEFAULT = new Set<string>()

const compose = composeFile()
const services: Record<string, Yaml> = compose.services
/** Gateway nodes: the services that run `switchboard serve` (the image's entrypoint, not overridden). */
const nodes = Object.entries(services).filter(([, service]) => service.build?.dockerfile === 'deploy/Dockerfile' && service.entrypoint === undefined)
const nodeNames = nodes.map(([name]) => name)

/** A service's environment as a map (Compose allows a map or a list of NAME=value), interpolated. */
function environment(service: Yaml): Record<string, string> {
  const raw: unknown = service.environment ?? {}
  const entries: [string, string][] = Array.isArray(raw)
    ? raw.map((line) => {
        const [name = '', ...value] = String(line).split('=')
        return [name, value.join('=')]
      })
    : Object.entries(raw as Record<string, unknown>).map(([name, value]) => [name, String(value ?? '')])
  return Object.fromEntries(entries.map(([name, value]) => [name, interpolate(value)]))
}

/** `source:target[:mode]` short-form volume mounts of a service. */
function mounts(service: Yaml): { source: string; target: string }[] {
  return ((service.volumes ?? []) as (string | Yaml)[]).map((volume) => {
    if (typeof volume !== 'string') return { source: String(volume.source), target: String(volume.target) }
    const [source = '', target = ''] = volume.split(':')
    return { source, target }
  })
}

/** `--name value` from a command list. */
function argument(command: string[], name: string): string | undefined {
  const at = command.indexOf(`--${name}`)
  return at === -1 ? undefined : command[at + 1]
}

const simulatorName = Object.entries(services).find(([, service]) => JSON.stringify(service.entrypoint ?? '').includes('simulator'))?.[0] ?? ''
const simulator = services[simulatorName] as Yaml
const simulatorCommand = (simulator?.command ?? []) as string[]
const postgresName = Object.entries(services).find(([, service]) => String(service.image).startsWith('postgres:'))?.[0] ?? ''
const postgres = services[postgresName] as Yaml

describe('docker-compose.yml services', () => {
  it('runs three gateway nodes in two regions, a Postgres 17 and the simulator', () => {
    expect(nodeNames).toHaveLength(3)
    const regions = nodes.map(([, service]) => environment(service).SWITCHBOARD_REGION)
    expect(new Set(regions).size).toBe(2)
    expect(postgres?.image).toMatch(/^postgres:17(\.|-|$)/)
    expect(simulator, 'no simulator service').toBeDefined()
  })

  it('builds the gateway image from deploy/Dockerfile at the repository root', () => {
    for (const [, service] of [...nodes, [simulatorName, simulator] as const]) {
      expect(service.build.context).toBe('.')
      expect(exists(service.build.dockerfile)).toBe(true)
    }
  })

  // The image has no tsx: the simulator runs from the bundle deploy/Dockerfile builds of its CLI.
  it('runs the simulator from its bundle in the image on 0.0.0.0:8090', () => {
    const bundle = 'packages/simulator/dist/simulator.mjs'
    expect(simulator.entrypoint).toEqual(['node', bundle])
    expect(readText('deploy/Dockerfile')).toContain(`--outfile=${bundle}`)
    expect(readText('deploy/Dockerfile')).toContain('packages/simulator/src/cli.ts')
    expect(exists('packages/simulator/src/cli.ts')).toBe(true)
    expect(argument(simulatorCommand, 'host')).toBe('0.0.0.0')
    expect(argument(simulatorCommand, 'port')).toBe('8090')
  })

  it('keeps the Postgres data on a named volume', () => {
    const data = mounts(postgres).find((mount) => mount.target === '/var/lib/postgresql/data')
    expect(data, 'no volume at /var/lib/postgresql/data').toBeDefined()
    expect(Object.keys(compose.volumes ?? {})).toContain(data?.source)
  })

  it('has a healthcheck behind every service_healthy dependency', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [dependency, condition] of Object.entries((service.depends_on ?? {}) as Record<string, Yaml>)) {
        expect(services[dependency], `${name} depends on a missing ${dependency}`).toBeDefined()
        if (condition.condition === 'service_healthy') expect(services[dependency]?.healthcheck?.test, `${dependency} has no healthcheck`).toBeDefined()
      }
    }
  })
})

describe.each(nodeNames)('docker-compose.yml %s', (name) => {
  const service = services[name] as Yaml
  const env = environment(service)

  it('sets every flag and variable the gateway reads', () => {
    for (const flag of gatewayFlags()) {
      if (FLAGS_LEFT_AT_DEFAULT.has(flag)) continue
      expect(
        envNamesOfFlag(flag).some((variable) => env[variable] !== undefined && env[variable] !== ''),
        `--${flag} (${envNamesOfFlag(flag).join(' or ')}) is not set`,
      ).toBe(true)
    }
    for (const variable of gatewayEnvReads()) expect(env[variable], `${variable} is read by the gateway but not set`).toBeDefined()
  })

  it('listens on every interface, not the gateway default of 127.0.0.1', () => {
    expect(env.SWITCHBOARD_HOST).toBe('0.0.0.0')
  })

  it('is its own node id and peers with every other node on their p2p ports', () => {
    expect(env.SWITCHBOARD_NODE_ID).toBe(name)
    const peers = (env.SWITCHBOARD_PEERS ?? '').split(',').map((peer) => peer.trim())
    const expected = nodes.filter(([other]) => other !== name).map(([other, otherService]) => `${other}:${environment(otherService).SWITCHBOARD_P2P_PORT}`)
    expect(peers.sort()).toEqual(expected.sort())
    expect(env.SWITCHBOARD_P2P_PORT).toBe('9000')
  })

  it('shares the fleet secret and the admin tokens with the other nodes', () => {
    for (const [, other] of nodes) {
      expect(environment(other).SWITCHBOARD_FLEET_SECRET).toBe(env.SWITCHBOARD_FLEET_SECRET)
      expect(environment(other).SWITCHBOARD_ADMIN_TOKENS).toBe(env.SWITCHBOARD_ADMIN_TOKENS)
    }
    expect(env.SWITCHBOARD_FLEET_SECRET?.length).toBeGreaterThanOrEqual(16)
    expect(env.SWITCHBOARD_ADMIN_TOKENS).toMatch(/^[^:,]+:(view|update)(,[^:,]+:(view|update))*$/)
  })

  it('uses the compose Postgres with its credentials', () => {
    const url = new URL(env.DATABASE_URL ?? env.SWITCHBOARD_DATABASE_URL ?? '')
    const database = environment(postgres)
    expect(url.hostname).toBe(postgresName)
    expect(url.port || '5432').toBe('5432')
    expect(decodeURIComponent(url.username)).toBe(database.POSTGRES_USER)
    expect(decodeURIComponent(url.password)).toBe(database.POSTGRES_PASSWORD)
    expect(url.pathname).toBe(`/${database.POSTGRES_DB}`)
  })

  it('keeps its p2p identity on a volume of its own', () => {
    const identity = mounts(service).find((mount) => mount.target === env.SWITCHBOARD_DATA_DIR)
    expect(identity, `nothing mounted at SWITCHBOARD_DATA_DIR (${env.SWITCHBOARD_DATA_DIR})`).toBeDefined()
    expect(Object.keys(compose.volumes ?? {})).toContain(identity?.source)
    const others = nodes.filter(([other]) => other !== name).map(([, other]) => mounts(other).find((mount) => mount.target === environment(other).SWITCHBOARD_DATA_DIR)?.source)
    expect(others).not.toContain(identity?.source)
  })

  it('mounts the compose config.json where SWITCHBOARD_CONFIG says', () => {
    const config = mounts(service).find((mount) => mount.target === env.SWITCHBOARD_CONFIG)
    expect(config?.source).toBe('./deploy/compose/config.json')
  })

  it('has a healthcheck on /health at its HTTP port, and waits for Postgres and the simulator', () => {
    const test = (service.healthcheck?.test ?? []) as string[]
    expect(gatewayGetRoutes()).toContain('/health')
    expect(test.join(' ')).toContain(`:${env.SWITCHBOARD_PORT}/health`)
    expect(test.join(' ')).not.toMatch(/\bcurl\b|\bwget\b/)
    expect(service.depends_on?.[postgresName]?.condition).toBe('service_healthy')
    expect(service.depends_on?.[simulatorName]?.condition).toBe('service_healthy')
  })

  // Regression (issue 37): the files assumed a 10 s shutdown; the gateway's bound is 24 s.
  it('gives the gateway its whole shutdown bound, with margin, before SIGKILL', () => {
    expect(service.stop_grace_period).toMatch(/^\d+s$/)
    expect(Number.parseInt(service.stop_grace_period, 10)).toBeGreaterThanOrEqual(shutdownBoundSeconds() + 10)
  })
})

describe('docker-compose.yml node-1', () => {
  it('is published on host port 8080, so the README curl works', () => {
    const node = services['node-1'] as Yaml
    const published = ((node.ports ?? []) as string[]).map((port) => String(port).split(':'))
    const container = environment(node).SWITCHBOARD_PORT
    expect(published.some((parts) => parts.at(-1) === container && parts.at(-2) === '8080')).toBe(true)
  })
})

describe('deploy/compose files', () => {
  const config = JSON.parse(readText('deploy/compose/config.json')) as Yaml

  it('config.json is a config the gateway accepts with each node environment', () => {
    for (const [name, service] of nodes) {
      expect(() => parseConfig(config, `deploy/compose/config.json (${name})`, environment(service))).not.toThrow()
      for (const variable of configEnvReferences(config)) expect(environment(service)[variable], `${name} lacks ${variable} for config.json`).toBeDefined()
    }
  })

  it('config.json sends every provider to the simulator service', () => {
    const providers = Object.entries(config.providers as Record<string, Yaml>)
    expect(providers.length).toBeGreaterThan(0)
    for (const [name, provider] of providers) {
      const url = new URL(provider.network_config?.base_url ?? 'https://unset.invalid')
      expect(url.hostname, `${name} does not point at the simulator`).toBe(simulatorName)
      expect(url.port).toBe(argument(simulatorCommand, 'port'))
    }
    // The README's curl asks node-1 for openai/gpt-4o-mini.
    expect(((config.providers.openai?.keys ?? []) as Yaml[]).some((key) => key.models.includes('*') || key.models.includes('gpt-4o-mini'))).toBe(true)
  })

  it('the simulator rules mounted into the simulator are valid rules', () => {
    const rules = mounts(simulator).find((mount) => mount.target === argument(simulatorCommand, 'rules'))
    expect(rules?.source).toBe('./deploy/compose/simulator-rules.json')
    expect(() => parseRules(JSON.parse(readText('deploy/compose/simulator-rules.json')))).not.toThrow()
  })
})

// Regression (issue 37): Compose v1 (`docker-compose` 1.29, still Debian's) refused the
// file for its top-level `name:`; the file now works with both Composes.
describe('docker-compose.yml for Compose v1.29 and v2', () => {
  /** Top-level keys of the Compose Specification both versions read. */
  const TOP_LEVEL = new Set(['services', 'volumes', 'networks', 'secrets', 'configs'])

  it('has only top-level keys both understand: no `name:` (v1 refuses it), no `version:` (v2 calls it obsolete)', () => {
    const unknown = Object.keys(compose).filter((key) => !TOP_LEVEL.has(key) && !key.startsWith('x-'))
    expect(unknown).toEqual([])
  })

  it('says how to name the project without `name:`', () => {
    expect(readText('docker-compose.yml')).toMatch(/COMPOSE_PROJECT_NAME|-p switchboard/)
    expect(readText('deploy/README.md')).toMatch(/COMPOSE_PROJECT_NAME|-p switchboard/)
  })

  // An anonymous volume (a bare container path, or a VOLUME of the image nobody mounts over)
  // is created anew at every `up` and orphaned at every `down`.
  it('mounts only named volumes it declares, or files of the repository', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const mount of mounts(service)) {
        if (mount.target === '') throw new Error(`${name} has an anonymous volume at ${mount.source}`)
        if (mount.source.startsWith('./') || mount.source.startsWith('/')) continue
        expect(Object.keys(compose.volumes ?? {}), `${name} mounts an undeclared volume ${mount.source}`).toContain(mount.source)
      }
    }
  })
})

// Regression (issue 37): the README's `docker run` failed: a container listens beyond
// loopback, and the node refuses to start there without admin tokens.
describe('deploy/README.md `docker run` example', () => {
  const block = /```sh\n((?:(?!```)[\s\S])*docker run[\s\S]*?)```/.exec(readText('deploy/README.md'))?.[1] ?? ''

  it('sets admin tokens, passes a gateway key and publishes on 127.0.0.1 only', () => {
    expect(block).toContain('docker run')
    expect(block).toMatch(/SWITCHBOARD_ADMIN_TOKENS=/)
    expect(block).toMatch(/-e SWITCHBOARD_ADMIN_TOKENS\b/)
    expect(block).toMatch(/GATEWAY_KEY/)
    expect(block).toMatch(/-p 127\.0\.0\.1:8080:8080/)
    expect(block).not.toMatch(/replace-me/)
  })
})
