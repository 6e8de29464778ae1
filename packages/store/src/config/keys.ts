/**
 * Key helpers shared by the store and whoever shows keys: stable ids and
 * redaction. Key values never leave the process in full.
 */
import { createHash } from 'node:crypto'

const builtInProviders = new Set(['openai', 'azure', 'anthropic'])

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

/** A provider ready to show: every key value redacted. */
export function redactProvider<Provider extends { keys: { value: string }[] }>(provider: Provider): Provider {
  return { ...provider, keys: provider.keys.map((key) => ({ ...key, value: redactKey(key.value) })) }
}
