/**
 * config.json: read, validated with `env.VAR` resolved in a copy, and kept as written for the
 * store (so those secrets never land in Postgres); stored providers made runnable here too.
 */
import { readFile } from 'node:fs/promises'
import { parseServiceAccount, PROVIDER_TYPES, type ProviderNetwork, type ProviderKey, type ProviderType } from '@switchboard/providers'
import { DEFAULT_BACKOFF_INITIAL_MS, DEFAULT_BACKOFF_MAX_MS } from '@switchboard/routing'
import { deriveKeyId } from '@switchboard/store'
import type { z } from 'zod'
import { parseRoles, type AdminToken } from '../access/tokens.ts'
import { configSchema, gatewayKeySchema, providerSchema, type RawConfig, type RawProvider } from './schema.ts'
import { describeIssue, resolveEnv } from './problems.ts'

/** A config problem, with the JSON path of the offending value. Printed without a stack trace. */
export class ConfigError extends Error {
  readonly code = 'config_invalid'
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file} is not a valid Switchboard config:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

/** A provider ready to run: type resolved, network defaults applied, key ids assigned, values resolved. */
export interface ResolvedProviderConfig {
  name: string
  type: ProviderType
  network: ProviderNetwork
  keys: ProviderKey[]
}

/** A validated config.json. */
export interface GatewayConfig {
  /** The file as written (`env.VAR` kept): what the config store imports. */
  source: RawConfig
  providers: ResolvedProviderConfig[]
  loadBalancer: NonNullable<RawConfig['load_balancer_config']>
  maxRequestBodyBytes: number
  adminTokens: AdminToken[]
  /** Browser origins besides the node's own allowed on the admin API. */
  allowedOrigins: string[]
  /** Gateway keys declared in config.json, values resolved (hashed at import, never stored). */
  gatewayKeys: GatewayKeySource[]
  /** `client.allow_direct_keys`: a request may bring its own provider key (`x-bf-direct-key`). Default false. */
  allowDirectKeys: boolean
  /** `request_log` of config.json with defaults: on, 7 days, no bodies. */
  requestLog: { enabled: boolean; retentionDays: number; content: boolean; maxBufferedRows: number }
  /** Slow-client protection (`server.*` of config.json with defaults: 10 s, 60 s, 4096). */
  connections: { headersTimeoutMs: number; requestTimeoutMs: number; maxConnections: number }
}

/** A gateway key as config.json declares it, `value` resolved. */
export type GatewayKeySource = z.infer<typeof gatewayKeySchema>

/** A provider as written in config.json or stored: its name plus the `providers.<name>` object. */
export interface ProviderSource extends RawProvider {
  name: string
}

const DEFAULT_BASE_URLS: Record<string, string> = {
  openai: 'https://api.openai.com',
  anthropic: 'https://api.anthropic.com',
  gemini: 'https://generativelanguage.googleapis.com',
}

/** Default retry budget: two retries of a key already tried (rotation to untried keys is free). */
export const DEFAULT_MAX_RETRIES = 2
export const DEFAULT_TIMEOUT_SECONDS = 30
export const DEFAULT_MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024

/** Loads and validates a config file. Throws ConfigError naming every bad path. */
export async function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new ConfigError(file, [code === 'ENOENT' ? 'file not found' : `cannot read it (${code ?? String(error)})`])
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ConfigError(file, [`not valid JSON: ${(error as Error).message}`])
  }
  return parseConfig(json, file, env)
}

/** Validates an already-parsed config object. */
export function parseConfig(json: unknown, file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const source = configSchema.safeParse(json)
  const problems: string[] = []
  const resolved = configSchema.safeParse(resolveEnv(json, [], env, problems))
  if (!resolved.success) problems.push(...resolved.error.issues.map((issue) => describeIssue(issue)))
  if (problems.length > 0 || !resolved.success || !source.success) throw new ConfigError(file, problems)
  const providers = Object.entries(resolved.data.providers).map(([name, raw]) => toProviderConfig({ ...raw, name }, `providers.${name}`, problems))
  const names = new Set<string>()
  for (const [index, key] of (resolved.data.gateway_keys ?? []).entries()) {
    if (names.has(key.name)) problems.push(`gateway_keys[${index}].name: duplicate gateway key name "${key.name}"`)
    if (key.value.length < 16) problems.push(`gateway_keys[${index}].value: use a key of at least 16 characters`)
    names.add(key.name)
  }
  if (problems.length > 0) throw new ConfigError(file, problems)
  const { server, request_log: log } = resolved.data
  return {
    source: source.data,
    providers,
    loadBalancer: resolved.data.load_balancer_config ?? {},
    maxRequestBodyBytes: server?.max_request_body_bytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES,
    adminTokens: (resolved.data.admin?.tokens ?? []).map((entry) => ({ token: entry.token, permissions: parseRoles(entry.roles ?? [entry.role!])! })),
    allowedOrigins: server?.allowed_origins ?? [],
    gatewayKeys: resolved.data.gateway_keys ?? [],
    allowDirectKeys: resolved.data.client?.allow_direct_keys ?? false,
    requestLog: { enabled: log?.enabled ?? true, retentionDays: log?.retention_days ?? 7, content: log?.content ?? false, maxBufferedRows: log?.max_buffered_rows ?? 50_000 },
    connections: { headersTimeoutMs: server?.headers_timeout_ms ?? 10_000, requestTimeoutMs: server?.request_timeout_ms ?? 60_000, maxConnections: server?.max_connections ?? 4_096 },
  }
}

/** Checks one provider body from the admin API by config.json's rules; the problems name their path in the body. */
export function checkProviderSource(name: string, body: unknown, env: NodeJS.ProcessEnv = process.env): { provider?: ProviderSource; problems: string[] } {
  const problems: string[] = []
  if (!/^[a-zA-Z0-9_.-]+$/.test(name)) problems.push('name: provider names use letters, digits, "_", "-" and "."')
  const parsed = providerSchema.safeParse(body)
  if (!parsed.success) return { problems: [...problems, ...parsed.error.issues.map((issue) => describeIssue(issue))] }
  resolveProvider(name, parsed.data, env, problems)
  return problems.length > 0 ? { problems } : { provider: { ...parsed.data, name }, problems }
}

/** Turns stored providers into runnable ones; one that no longer resolves here (a variable unset) is left out and reported. */
export function resolveProviders(sources: readonly ProviderSource[], env: NodeJS.ProcessEnv, report: (problem: string) => void): ResolvedProviderConfig[] {
  return sources.flatMap(({ name, ...body }) => {
    const problems: string[] = []
    const provider = resolveProvider(name, body, env, problems)
    if (problems.length === 0 && provider !== null) return [provider]
    report(`provider ${name} left out: ${problems.join('; ')}`)
    return []
  })
}

/** One provider body with `env.VAR` resolved and checked, runnable; null (and `problems`) when it is not. */
function resolveProvider(name: string, body: unknown, env: NodeJS.ProcessEnv, problems: string[]): ResolvedProviderConfig | null {
  const resolved = providerSchema.safeParse(resolveEnv(body, [], env, problems))
  if (!resolved.success) problems.push(...resolved.error.issues.map((issue) => describeIssue(issue)))
  return resolved.success ? toProviderConfig({ ...resolved.data, name }, '', problems) : null
}

function toProviderConfig(raw: ProviderSource, path: string, problems: string[]): ResolvedProviderConfig {
  const name = raw.name
  const at = (suffix: string) => (path === '' ? suffix : `${path}${suffix.startsWith('[') ? '' : '.'}${suffix}`)
  const type = raw.custom_provider_config?.base_provider_type ?? ((PROVIDER_TYPES as readonly string[]).includes(name) ? (name as ProviderType) : null)
  if (type === null) {
    problems.push(
      `${path || 'name'}: unknown provider "${name}"; use openai, azure, anthropic, bedrock, gemini or vertex, or add "custom_provider_config": {"base_provider_type": "openai"} for an OpenAI-compatible upstream`,
    )
  }
  const network = raw.network_config ?? {}
  // A custom provider never inherits its base type's public endpoint: it must say where it lives.
  const baseUrl = network.base_url ?? (raw.custom_provider_config ? '' : (DEFAULT_BASE_URLS[name] ?? ''))
  // Bedrock's and Vertex's endpoints follow each key's region unless base_url says otherwise.
  const regional = type === 'bedrock' || type === 'vertex'
  if (baseUrl === '' && !regional && !(type === 'azure' && raw.keys.every((key) => key.azure_key_config?.endpoint))) {
    problems.push(`${at('network_config.base_url')}: required for this provider (no default upstream is known)`)
  }
  const initial = network.retry_backoff_initial ?? DEFAULT_BACKOFF_INITIAL_MS
  const max = network.retry_backoff_max ?? DEFAULT_BACKOFF_MAX_MS
  if (max < initial) problems.push(`${at('network_config.retry_backoff_max')}: must be at least retry_backoff_initial (${initial})`)
  const ids = new Set<string>()
  const keys = raw.keys.map((key, index): ProviderKey => {
    const id = key.id ?? deriveKeyId(name, key.name)
    if (ids.has(id)) problems.push(`${at(`keys[${index}]`)}.${key.id ? 'id' : 'name'}: duplicate key ${key.id ? 'id' : 'name'} "${key.id ?? key.name}"`)
    ids.add(id)
    if (type === 'vertex') checkVertexKey(key, at(`keys[${index}]`), problems)
    return { ...key, id }
  })
  return {
    name,
    type: type ?? 'openai',
    // The deadlines inside an attempt (issue 35) as written: left unset, the engine applies its defaults.
    network: {
      ...network,
      base_url: baseUrl || (regional ? '' : 'http://invalid.localhost'),
      default_request_timeout_in_seconds: network.default_request_timeout_in_seconds ?? DEFAULT_TIMEOUT_SECONDS,
      max_retries: network.max_retries ?? DEFAULT_MAX_RETRIES,
      retry_backoff_initial: initial,
      retry_backoff_max: max,
      extra_headers: network.extra_headers ?? {},
    },
    keys,
  }
}

/** A Vertex key needs its project and region, and credentials that are a service-account JSON (never echoed: they are secret). */
function checkVertexKey(key: RawProvider['keys'][number], path: string, problems: string[]): void {
  if (key.vertex_key_config === undefined) {
    problems.push(`${path}.vertex_key_config: required for a Vertex AI key ({"project_id", "region", "auth_credentials": the service-account JSON})`)
    return
  }
  const credentials = key.vertex_key_config.auth_credentials ?? key.value
  // Credentials sent back as the API shows them (redactKey's `abc...wxyz`, or `****`) keep the stored ones: checked when they were stored.
  if (credentials === '****' || (credentials.length === 10 && credentials.slice(3, 6) === '...')) return
  try {
    parseServiceAccount(credentials)
  } catch (error) {
    const where = key.vertex_key_config.auth_credentials === undefined ? 'value' : 'vertex_key_config.auth_credentials'
    problems.push(`${path}.${where}: ${error instanceof Error ? error.message : 'not a service-account JSON'}`)
  }
}
