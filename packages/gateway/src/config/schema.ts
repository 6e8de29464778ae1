/**
 * config.json, validated with zod. The providers schema of the reference product
 * (design.md, "External contract"); `value` may be `env.VAR`.
 */
import { z } from 'zod'
import { PROVIDER_TYPES } from '@switchboard/providers'
import { SWITCH_NAMES, type SwitchName } from '@switchboard/routing'

const positiveNumber = z.number().positive()

const azureKeyConfig = z.strictObject({
  endpoint: z.url().optional(),
  deployments: z.record(z.string(), z.string().min(1)).optional(),
  api_version: z.string().min(1).optional(),
})

/** Amazon Bedrock (issue 20): SigV4 credentials, or none for a Bedrock API key in `value`. */
const bedrockKeyConfig = z.strictObject({
  access_key: z.string().min(1).optional(),
  secret_key: z.string().min(1).optional(),
  session_token: z.string().min(1).optional(),
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'an AWS region, e.g. "us-east-1"'),
  deployments: z.record(z.string(), z.string().min(1)).optional(),
}).refine((config) => (config.access_key === undefined) === (config.secret_key === undefined), 'give both access_key and secret_key (SigV4), or neither (the key\'s value is a Bedrock API key)')

/** Vertex AI (issue 20): a key's project and region, and its service account's JSON (text or object; else the key's `value`). */
const vertexKeyConfig = z.strictObject({
  project_id: z.string().regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'a Google Cloud project id, e.g. "my-project-123"'),
  region: z.string().regex(/^(global|[a-z]+-[a-z]+\d+)$/, 'a Vertex AI region, e.g. "us-central1" or "global"'),
  auth_credentials: z.union([z.string().min(1), z.record(z.string(), z.unknown()).transform((value) => JSON.stringify(value))]).optional(),
})

const keySchema = z.strictObject({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  value: z.string().min(1),
  models: z.array(z.string().min(1)).min(1),
  weight: z.number().nonnegative().default(1),
  aliases: z.record(z.string(), z.string().min(1)).optional(),
  azure_key_config: azureKeyConfig.optional(),
  bedrock_key_config: bedrockKeyConfig.optional(),
  vertex_key_config: vertexKeyConfig.optional(),
})

const networkSchema = z.strictObject({
  base_url: z.url().optional(),
  default_request_timeout_in_seconds: positiveNumber.optional(),
  max_retries: z.number().int().nonnegative().optional(),
  retry_backoff_initial: z.number().nonnegative().optional(),
  retry_backoff_max: z.number().nonnegative().optional(),
  extra_headers: z.record(z.string(), z.string()).optional(),
  connect_timeout_in_seconds: positiveNumber.optional(),
  first_token_timeout_in_seconds: positiveNumber.optional(),
  stream_idle_timeout_in_seconds: positiveNumber.optional(),
  max_retry_after_in_seconds: z.number().nonnegative().optional(),
})

/** One provider: `providers.<name>` of config.json, and the body of the providers API. */
export const providerSchema = z.strictObject({
  keys: z.array(keySchema),
  network_config: networkSchema.optional(),
  custom_provider_config: z.strictObject({ base_provider_type: z.enum(PROVIDER_TYPES) }).optional(),
})

/** A schema's fields for the five switches, each of `type`. */
export const switchFields = <T extends z.ZodType>(type: T) => Object.fromEntries(SWITCH_NAMES.map((name) => [name, type])) as Record<SwitchName, T>

/** The five switches of the adaptive load balancer (reference: Configuration). */
export const loadBalancerSchema = z.strictObject({
  ...switchFields(z.boolean().optional()),
  // History (issue 14): kept beside the switches; a PUT of the config changes them only when sent.
  history_enabled: z.boolean().optional(),
  history_retention_days: z.number().int('use a whole number of days').min(1).max(365).optional(),
})

/** Gateway-level limits (our addition to the reference schema). */
const serverSchema = z.strictObject({
  max_request_body_bytes: z.number().int().positive().optional(),
  /** Browser origins besides the node's own that may call the admin API (`https://dash.example.com`). */
  allowed_origins: z.array(z.string().regex(/^https?:\/\/[^/\s]+$/, 'an origin is scheme://host[:port], e.g. "https://dash.example.com"')).optional(),
  /** A client has this long to send a request's headers (slow-client protection). */
  headers_timeout_ms: z.number().int().min(1_000).max(600_000).optional(),
  /** ...and this long to send the whole request, body included. */
  request_timeout_ms: z.number().int().min(1_000).max(3_600_000).optional(),
  /** Open client connections at most; past it, the oldest connection with no request in progress is closed. */
  max_connections: z.number().int().min(16).max(1_000_000).optional(),
})

const permission = z.string().regex(/^(view|update|(adaptive_routing|providers|logs|settings)\.(view|update))$/, 'a role is view, update, or <area>.<view|update> with area adaptive_routing, providers, logs or settings')

/**
 * Admin API bearer tokens (also from SWITCHBOARD_ADMIN_TOKENS): `role` `view` reads every area,
 * `update` does everything; `roles` lists area roles instead (`["providers.update", "logs.view"]`).
 */
const adminSchema = z.strictObject({
  tokens: z
    .array(
      z
        .strictObject({ token: z.string().min(16, 'use a token of at least 16 characters'), role: z.enum(['view', 'update']).optional(), roles: z.array(permission).min(1).optional() })
        .refine((token) => token.role !== undefined || token.roles !== undefined, 'give a token "role" (view or update) or "roles"'),
    )
    .optional(),
})

/** Keys callers of the inference API send (`Authorization: Bearer` or `x-api-key`); `value` usually `env.VAR`. */
export const gatewayKeySchema = z.strictObject({
  name: z.string().min(1).max(100).regex(/^[A-Za-z0-9_.:@-]+$/, 'key names use letters, digits and "_", "-", ".", ":", "@"'),
  /** At least 16 characters once `env.VAR` is resolved (checked in load.ts). */
  value: z.string().min(1).max(500),
  providers: z.array(z.string().min(1)).min(1).optional(),
  models: z.array(z.string().min(1)).min(1).optional(),
  requests_per_minute: z.number().int().positive().optional(),
  tokens_per_minute: z.number().int().positive().optional(),
})

/** How callers may use the gateway (reference: `client` config). */
const clientSchema = z.strictObject({
  /** Let a request bring its own provider key in `x-bf-direct-key` (default false). */
  allow_direct_keys: z.boolean().optional(),
})

/** The request log (issue 15; design.md "History, incidents, request log"). */
export const requestLogSchema = z.strictObject({
  enabled: z.boolean().optional(),
  retention_days: z.number().int().min(1).max(365).optional(),
  content: z.boolean().optional(),
  /** Rows waiting for Postgres at most; past it the oldest are dropped and counted. */
  max_buffered_rows: z.number().int().min(100).max(10_000_000).optional(),
})

export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  providers: z.record(z.string().regex(/^[a-zA-Z0-9_.-]+$/, 'provider names use letters, digits, "_", "-" and "."'), providerSchema),
  load_balancer_config: loadBalancerSchema.optional(),
  server: serverSchema.optional(),
  admin: adminSchema.optional(),
  gateway_keys: z.array(gatewayKeySchema).optional(),
  client: clientSchema.optional(),
  request_log: requestLogSchema.optional(),
})

/** config.json as written (after `env.VAR` resolution). */
export type RawConfig = z.infer<typeof configSchema>
export type RawProvider = z.infer<typeof providerSchema>
