/**
 * What the deploy tests read from the repository: the gateway's flags, routes and
 * environment reads (from its source, so a new flag or route shows up here by itself),
 * and the deploy files, parsed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse, parseAllDocuments } from 'yaml'

/** The repository root. */
export const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))

/** A file of the repository as text. */
export function readText(path: string): string {
  return readFileSync(join(root, path), 'utf8')
}

/** True when the repository has this file or folder. */
export function exists(path: string): boolean {
  return existsSync(join(root, path))
}

/** The flags `switchboard serve` accepts: the FLAGS array of packages/gateway/src/cli.ts. */
export function gatewayFlags(): string[] {
  const source = readText('packages/gateway/src/cli.ts')
  const match = /const FLAGS = \[([^\]]*)\]/.exec(source)
  if (!match?.[1]) throw new Error('packages/gateway/src/cli.ts has no `const FLAGS = [...]` any more: update deploy/test/repo.ts')
  return [...match[1].matchAll(/'([a-z0-9-]+)'/g)].map((flag) => flag[1] ?? '')
}

/** `--p2p-port` -> `SWITCHBOARD_P2P_PORT`, as cli.ts derives it. */
export function flagEnvName(flag: string): string {
  return `SWITCHBOARD_${flag.toUpperCase().replaceAll('-', '_')}`
}

/** Env names that satisfy a flag: its SWITCHBOARD_ name, and DATABASE_URL for --database-url. */
export function envNamesOfFlag(flag: string): string[] {
  return flag === 'database-url' ? [flagEnvName(flag), 'DATABASE_URL'] : [flagEnvName(flag)]
}

const ENV_PLACEHOLDERS = new Set(['VAR', 'NAME'])
/**
 * Set only by local launchers (npm start, the chaos run) or tests, never by a deployment; and
 * SWITCHBOARD_INSECURE, an opt-out a deployment should not carry (the deploy files set admin tokens).
 */
const LAUNCHER_ONLY = new Set([
  'SWITCHBOARD_EXIT_WITH_PARENT',
  'SWITCHBOARD_GATEWAY_KEY_WINDOW_MS',
  'SWITCHBOARD_INSECURE',
  // Set by a node's primary for the workers it forks (workers/hub.ts), never by a deployment.
  'SWITCHBOARD_WORKER_INDEX',
  'SWITCHBOARD_WORKER_COUNT',
  'SWITCHBOARD_WORKER_LISTEN',
])

/** Tracing is opt-in (issue 40): unset, it is off; the deploy files leave it to the operator (docs/operations.md, Traces). */
const OPT_IN = /^(OTEL_|SWITCHBOARD_OTEL_)/

/** Environment variables the gateway's (non-test) source reads by name, e.g. `env.LOG_LEVEL`. */
export function gatewayEnvReads(): string[] {
  const names = new Set<string>()
  for (const file of sourceFiles('packages/gateway/src')) {
    for (const match of readText(file).matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b/g)) {
      if (match[1] && !ENV_PLACEHOLDERS.has(match[1]) && !LAUNCHER_ONLY.has(match[1]) && !OPT_IN.test(match[1])) names.add(match[1])
    }
  }
  return [...names].sort()
}

/** Paths the gateway's Hono app answers GET on (`app.get('/path', ...)` in packages/gateway/src/http/app.ts). */
export function gatewayGetRoutes(): string[] {
  const source = readText('packages/gateway/src/http/app.ts')
  return [...source.matchAll(/\bapp\.get\(\s*'([^']+)'/g)].map((match) => match[1] ?? '')
}

/** The TypeScript files (tests left out) under a folder of the repository, by repository path. */
export function sourceFiles(folder: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`
    if (entry.isDirectory()) out.push(...sourceFiles(path))
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(path)
  }
  return out
}

/** `env.NAME` values of a config.json (provider keys), the variables a node must have: the gateway's own reading. */
export { configEnvReferences } from '../../packages/gateway/src/config/placeholders.ts'

/** A parsed YAML mapping. `any`: YAML is untyped until the tests check each field they use. */
export type Yaml = Record<string, any>

/** One Kubernetes object, with the file it came from. */
export interface Manifest {
  file: string
  object: Yaml
}

/** The kustomization's resource files, in order. */
export function kustomizationResources(): string[] {
  const kustomization = parse(readText('deploy/k8s/kustomization.yaml')) as Yaml
  return (kustomization.resources ?? []) as string[]
}

/** The kustomization's configMapGenerator entries. */
export function kustomizationConfigMapGenerators(): Yaml[] {
  const kustomization = parse(readText('deploy/k8s/kustomization.yaml')) as Yaml
  return (kustomization.configMapGenerator ?? []) as Yaml[]
}

/**
 * The ConfigMaps kustomize generates, as `kubectl apply -k` would create them, except for
 * the content hash kustomize appends to the name (and to every reference to it).
 */
export function generatedConfigMaps(): Manifest[] {
  return kustomizationConfigMapGenerators().map((generator) => {
    const data = Object.fromEntries(
      ((generator.files ?? []) as string[]).map((entry) => {
        const [key, path = key] = entry.split('=') as [string, string?]
        return [key.split('/').at(-1) ?? key, readText(`deploy/k8s/${path}`)]
      }),
    )
    const labels = generator.options?.labels as Record<string, string> | undefined
    return { file: 'kustomization.yaml', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name, ...(labels ? { labels } : {}) }, data } }
  })
}

/** The SHUTDOWN_BOUND_MS of packages/gateway/src/cli.ts, in seconds: how long after SIGTERM a node exits at the latest. */
export function shutdownBoundSeconds(): number {
  const match = /export const SHUTDOWN_BOUND_MS = ([\d_]+)/.exec(readText('packages/gateway/src/cli.ts'))
  if (!match?.[1]) throw new Error('packages/gateway/src/cli.ts has no `export const SHUTDOWN_BOUND_MS = ...` any more: update deploy/test/repo.ts')
  return Number(match[1].replaceAll('_', '')) / 1000
}

/** Every object of every resource listed in deploy/k8s/kustomization.yaml, and the ConfigMaps it generates. */
export function k8sManifests(): Manifest[] {
  return [...resourceManifests(), ...generatedConfigMaps()]
}

function resourceManifests(): Manifest[] {
  return kustomizationResources().flatMap((file) =>
    parseAllDocuments(readText(`deploy/k8s/${file}`))
      .map((document) => {
        if (document.errors.length > 0) throw new Error(`deploy/k8s/${file}: ${document.errors.map((error) => error.message).join('; ')}`)
        return document.toJS() as Yaml | null
      })
      .filter((object): object is Yaml => object !== null)
      .map((object) => ({ file, object })),
  )
}

/** docker-compose.yml, with YAML merge keys (`<<: *anchor`) applied as Compose does. */
export function composeFile(): Yaml {
  return parse(readText('docker-compose.yml'), { merge: true }) as Yaml
}

/**
 * A Compose value with `${NAME:-default}` / `${NAME-default}` / `${NAME}` interpolated from
 * `variables` (default: none set, so defaults apply): what `docker compose up` sees in a
 * clean shell.
 */
export function interpolate(value: string, variables: Record<string, string> = {}): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (_whole, name: string, operator: string | undefined, fallback: string | undefined) => {
    const set = variables[name]
    if (operator?.endsWith('-')) return set !== undefined && (operator === '-' || set !== '') ? set : (fallback ?? '')
    if (operator?.endsWith('?') && (set === undefined || set === '')) throw new Error(`compose needs ${name}: ${fallback ?? ''}`)
    return set ?? ''
  })
}

/** One Dockerfile instruction, continuation lines joined. */
export interface Instruction {
  keyword: string
  args: string
  /** The index of the stage (FROM) it belongs to; -1 before the first FROM. */
  stage: number
}

/** deploy/Dockerfile as instructions; comments dropped. */
export function dockerfile(): Instruction[] {
  const logical = readText('deploy/Dockerfile')
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
  let stage = -1
  return logical.map((line) => {
    const [keyword = '', ...rest] = line.split(/\s+/)
    if (keyword.toUpperCase() === 'FROM') stage += 1
    return { keyword: keyword.toUpperCase(), args: rest.join(' '), stage }
  })
}

/**
 * The uid the image runs as: its last USER, resolved through the useradd that created it. Pass
 * the whole Dockerfile: the runtime stage (FROM scratch) copies its /etc/passwd from the stage
 * that ran useradd.
 */
export function imageUser(instructions: Instruction[]): { name: string; uid: number | undefined } {
  const users = instructions.filter((instruction) => instruction.keyword === 'USER')
  const name = users.at(-1)?.args.split(':')[0] ?? 'root'
  if (/^\d+$/.test(name)) return { name, uid: Number(name) }
  const created = instructions.find((instruction) => instruction.keyword === 'RUN' && new RegExp(`useradd\\b[^&;]*\\s${name}(\\s|$)`).test(instruction.args))
  const uid = created && /--uid\s+(\d+)/.exec(created.args)?.[1]
  return { name, uid: name === 'root' ? 0 : uid ? Number(uid) : undefined }
}
