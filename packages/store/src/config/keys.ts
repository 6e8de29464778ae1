/**
 * Key helpers shared by the store and whoever shows keys: stable ids and
 * redaction. Key values never leave the process in full.
 */
import { createHash } from 'node:crypto'

const builtInProviders = new Set(['openai', 'azure', 'anthropic', 'bedrock', 'gemini', 'vertex'])

/** Shortest value of which we show first 3 + last 4 characters; shorter ones would give too much away. */
const shortestRevealed = 16

/**
 * Masks a key value as `sk-...abcd`. Short values are fully masked (with a
 * fixed mask, so not even their length shows). `env.VAR` references name a
 * variable, not a secret, so they are shown as written.
 */
export function redactKey(value: string): string {
  if (value.startsWith('env.')) return value
  if (value.length < shortestRevealed) return '****'
  return `${value.slice(0, 3)}...${value.slice(-4)}`
}

/**
 * The id of a key configured without one: stable across boots and nodes
 * because it depends only on provider and key name (design.md, config.json).
 */
export function deriveKeyId(provider: string, name: string): string {
  const digest = createHash('sha256').update(`${provider}\u0000${name}`).digest('hex')
  return `${provider}-${digest.slice(0, 12)}`
}

/** The upstream type of a provider: its own name when built in, else its custom base type. */
export function providerType(name: string, custom?: { base_provider_type?: string }): string {
  if (custom?.base_provider_type) return custom.base_provider_type
  if (builtInProviders.has(name)) return name
  throw new Error(`provider "${name}" is not built in (${[...builtInProviders].join(', ')}); set custom_provider_config.base_provider_type`)
}

/** The secret fields of a `bedrock_key_config` (the access key id is an identifier, shown as written). */
const bedrockSecrets = ['secret_key', 'session_token'] as const

/** The secret field of a `vertex_key_config`: the service-account JSON (project and region are not secret). */
const vertexSecrets = ['auth_credentials'] as const

function redactFields<Config extends Record<string, unknown>>(config: Config, fields: readonly string[]): Config {
  const out: Record<string, unknown> = { ...config }
  for (const field of fields) if (typeof out[field] === 'string') out[field] = redactKey(out[field])
  return out as Config
}

function keepFields<Config extends Record<string, unknown>>(sent: Config | undefined, before: Record<string, unknown> | undefined, fields: readonly string[]): Config | undefined {
  if (sent === undefined || before === undefined) return sent
  const out: Record<string, unknown> = { ...sent }
  for (const field of fields) {
    const stored = before[field]
    if (typeof stored === 'string' && out[field] === redactKey(stored)) out[field] = stored
  }
  return out as Config
}

/** A key with the secrets redaction hides: its value, and those of its Bedrock or Vertex config. */
type SecretsOf = { value: string; bedrock_key_config?: Record<string, unknown>; vertex_key_config?: Record<string, unknown> }

/** A key sent back as it was shown (its value or config secrets still redacted) keeps the stored secrets; new ones are taken. */
export function keepSecrets<Key extends SecretsOf>(sent: Key, before: SecretsOf | undefined): Key {
  if (before === undefined) return sent
  const bedrock = keepFields(sent.bedrock_key_config, before.bedrock_key_config, bedrockSecrets)
  const vertex = keepFields(sent.vertex_key_config, before.vertex_key_config, vertexSecrets)
  return { ...sent, value: sent.value === redactKey(before.value) ? before.value : sent.value, ...(bedrock ? { bedrock_key_config: bedrock } : {}), ...(vertex ? { vertex_key_config: vertex } : {}) }
}

/** A key ready to show: its value and the secrets of its Bedrock or Vertex config redacted like key values. */
export function redactKeySecrets<Key extends SecretsOf>(key: Key): Key {
  return {
    ...key,
    value: redactKey(key.value),
    ...(key.bedrock_key_config ? { bedrock_key_config: redactFields(key.bedrock_key_config, bedrockSecrets) } : {}),
    ...(key.vertex_key_config ? { vertex_key_config: redactFields(key.vertex_key_config, vertexSecrets) } : {}),
  }
}
