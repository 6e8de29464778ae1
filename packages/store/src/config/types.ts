/**
 * The config store's own view of providers, keys and settings, mirroring the
 * `config.json` schema in design.md ("External contract"). Field names keep
 * config.json's snake_case so a file or an API body maps over unchanged.
 */
import type { LoadBalancerSettings, SwitchName } from '@switchboard/routing'

/** One API key of a provider. `value` may be an `env.VAR` reference, stored as written. */
export interface KeyConfig {
  /** Absent in config.json means: derived from provider + name (see `deriveKeyId`). */
  id?: string
  name: string
  value: string
  /** `["*"]` = every model. */
  models: string[]
  weight: number
  aliases?: Record<string, string>
  azure_key_config?: Record<string, unknown>
  /** Amazon Bedrock: access_key, secret_key, session_token, region, deployments (issue 20). */
  bedrock_key_config?: Record<string, unknown>
  /** Vertex AI: project_id, region, auth_credentials (the service-account JSON) (issue 20). */
  vertex_key_config?: Record<string, unknown>
}

/** A key as the store holds it: with its id and provider always known. */
export interface StoredKey extends KeyConfig {
  id: string
  provider: string
  updated_at: Date
}

/** How to reach a provider. */
export interface NetworkConfig {
  base_url?: string
  default_request_timeout_in_seconds?: number
  max_retries?: number
  retry_backoff_initial?: number
  retry_backoff_max?: number
  extra_headers?: Record<string, string>
  connect_timeout_in_seconds?: number
  first_token_timeout_in_seconds?: number
  stream_idle_timeout_in_seconds?: number
  max_retry_after_in_seconds?: number
}

/** Marks an OpenAI-compatible upstream under a name of its own. */
export interface CustomProviderConfig {
  base_provider_type: string
  [field: string]: unknown
}

/** A provider with its keys, as in config.json's `providers.<name>` plus its name. */
export interface ProviderConfig {
  name: string
  /** Defaults to the name for built-in providers, else `custom_provider_config.base_provider_type`. */
  type?: string
  keys: KeyConfig[]
  network_config?: NetworkConfig
  custom_provider_config?: CustomProviderConfig
}

/** A provider as the store holds it: its type resolved, its keys stored. */
export interface StoredProvider extends Omit<ProviderConfig, 'type' | 'keys'> {
  type: string
  keys: StoredKey[]
  updated_at: Date
}

/** Who last set a setting: config.json, or the admin API / dashboard (which wins). */
export type SettingOrigin = 'config' | 'api'

/** The settings with, per field, who set it (`default` = nobody yet). */
export interface Settings {
  load_balancer_config: LoadBalancerSettings
  origins: Record<SwitchName, SettingOrigin | 'default'>
}

/** The parts of config.json the store keeps. */
export interface ConfigFile {
  providers?: Record<string, Omit<ProviderConfig, 'name'>>
  load_balancer_config?: Partial<LoadBalancerSettings>
}
