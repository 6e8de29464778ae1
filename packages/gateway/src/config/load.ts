/** Reads config.json: JSON, then `env.VAR` resolution, then schema, then defaults. */
import { readFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import type { z } from 'zod'
import type { NetworkConfig, ProviderKey, ProviderType } from '@switchboard/providers'
import { DEFAULT_BACKOFF_INITIAL_MS, DEFAULT_BACKOFF_MAX_MS } from '@switchboard/routing'
import { configSchema, type RawConfig, type RawProvider } from './schema.ts'

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

/** A provider ready to run: type resolved, network defaults applied, key ids assigned. */
export interface ProviderConfig {
  name: string
  type: ProviderType
  network: NetworkConfig
  keys: ProviderKey[]
}

export interface GatewayConfig {
  providers: ProviderConfig[]
  loadBalancer: NonNullable<RawConfig['load_balancer_config']>
  maxRequestBodyBytes: number
}

const DEFAULT_BASE_URLS: Record<string, string> = {
  openai: 'https://api.openai.com',
  anthropic: 'https://api.anthropic.com',
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
  const problems: string[] = []
  const resolved = resolveEnv(json, [], env, problems)
  const parsed = configSchema.safeParse(resolved)
  if (!parsed.success) problems.push(...parsed.error.issues.map(describeIssue))
  if (problems.length > 0 || !parsed.success) throw new ConfigError(file, problems)
  const providers = Object.entries(parsed.data.providers).map(([name, raw]) => toProviderConfig(name, raw, problems))
  if (problems.length > 0) throw new ConfigError(file, problems)
  return {
    providers,
    loadBalancer: parsed.data.load_balancer_config ?? {},
    maxRequestBodyBytes: parsed.data.server?.max_request_body_bytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES,
  }
}

function toProviderConfig(name: string, raw: RawProvider, problems: string[]): ProviderConfig {
  const type = providerType(name, raw)
  if (type === null) {
    problems.push(
      `providers.${name}: unknown provider; use openai, azure or anthropic, or add "custom_provider_config": {"base_provider_type": "openai"} for an OpenAI-compatible upstream`,
    )
  }
  const network = raw.network_config ?? {}
  // A custom provider never inherits its base type's public endpoint: it must say where it lives.
  const baseUrl = network.base_url ?? (raw.custom_provider_config ? '' : DEFAULT_BASE_URLS[name] ?? '')
  if (baseUrl === '' && !(type === 'azure' && raw.keys.every((key) => key.azure_key_config?.endpoint))) {
    problems.push(`providers.${name}.network_config.base_url: required for this provider (no default upstream is known)`)
  }
  const initial = network.retry_backoff_initial ?? DEFAULT_BACKOFF_INITIAL_MS
  const max = network.retry_backoff_max ?? DEFAULT_BACKOFF_MAX_MS
  if (max < initial) problems.push(`providers.${name}.network_config.retry_backoff_max: must be at least retry_backoff_initial (${initial})`)
  const ids = new Set<string>()
  const keys = raw.keys.map((key, index): ProviderKey => {
    const id = key.id ?? stableKeyId(name, key.name)
    if (ids.has(id)) problems.push(`providers.${name}.keys[${index}].${key.id ? 'id' : 'name'}: duplicate key ${key.id ? 'id' : 'name'} "${key.id ?? key.name}"`)
    ids.add(id)
    return { ...key, id }
  })
  return {
    name,
    type: type ?? 'openai',
    network: {
      base_url: baseUrl || 'http://invalid.localhost',
      default_request_timeout_in_seconds: network.default_request_timeout_in_seconds ?? DEFAULT_TIMEOUT_SECONDS,
      max_retries: network.max_retries ?? DEFAULT_MAX_RETRIES,
      retry_backoff_initial: initial,
      retry_backoff_max: max,
      extra_headers: network.extra_headers ?? {},
    },
    keys,
  }
}

function providerType(name: string, raw: RawProvider): ProviderType | null {
  if (raw.custom_provider_config) return raw.custom_provider_config.base_provider_type
  if (name === 'openai' || name === 'azure' || name === 'anthropic') return name
  return null
}

/** A key id that survives restarts and is the same on every node: a UUID-shaped hash of provider + name. */
export function stableKeyId(provider: string, keyName: string): string {
  const hex = createHash('sha256').update(`${provider}\u0000${keyName}`).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** Replaces every string "env.NAME" with the variable's value; a missing variable is a problem at that path. */
function resolveEnv(value: unknown, path: (string | number)[], env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === 'string') {
    if (!value.startsWith('env.')) return value
    const name = value.slice(4)
    const resolved = env[name]
    if (resolved === undefined || resolved === '') {
      problems.push(`${formatPath(path)}: environment variable ${name} is not set`)
      return value
    }
    return resolved
  }
  if (Array.isArray(value)) return value.map((item, index) => resolveEnv(item, [...path, index], env, problems))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[key] = resolveEnv(item, [...path, key], env, problems)
    return out
  }
  return value
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = formatPath(issue.path as (string | number)[])
  let reason = issue.message
  if (issue.code === 'invalid_type') reason = `expected ${issue.expected}${issue.message.includes('received') ? `, ${issue.message.slice(issue.message.indexOf('received'))}` : ''}`
  if (issue.code === 'unrecognized_keys') return `${path || '(top level)'}: unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${key}"`).join(', ')}`
  return `${path || '(top level)'}: ${reason}`
}

/** `providers.openai.keys[1].weight` */
export function formatPath(path: readonly (string | number | symbol)[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? String(part) : `.${String(part)}`
  }
  return out
}
