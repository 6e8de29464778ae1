import type { AttemptFailure, BalancerKey, TokenUsage } from '@switchboard/routing'
import type { Cancellation } from './http/cancellation.ts'
import type { RateLimitExhaustion } from './http/rate-limit.ts'

/** The base wire format an upstream speaks. */
export const PROVIDER_TYPES = ['openai', 'azure', 'anthropic', 'bedrock', 'gemini', 'vertex'] as const

/** One of the base wire formats. */
export type ProviderType = (typeof PROVIDER_TYPES)[number]

/** Per-key Azure settings: which deployment serves which model, and the API version. */
export interface AzureKeyConfig {
  /** Resource endpoint, e.g. https://my-resource.openai.azure.com; falls back to the provider's base_url. */
  endpoint?: string
  /** Model name -> deployment name. A model without an entry uses its own name as the deployment. */
  deployments?: Record<string, string>
  /** `api-version` query parameter; defaults to DEFAULT_AZURE_API_VERSION. */
  api_version?: string
}

/** Per-key Amazon Bedrock settings: SigV4 with `access_key` and `secret_key`, else the key's `value` as a bearer API key. */
export interface BedrockKeyConfig {
  access_key?: string
  secret_key?: string
  session_token?: string
  /** AWS region, e.g. us-east-1: picks the runtime endpoint and signs the request. */
  region: string
  /** Model name -> Bedrock model id or inference-profile ARN. A model without an entry is sent as named. */
  deployments?: Record<string, string>
}

/** Per-key Vertex AI settings: requests carry an OAuth2 token of the service account in `auth_credentials`. */
export interface VertexKeyConfig {
  project_id: string
  /** Vertex region, e.g. us-central1 (or `global`): picks the endpoint and the resource path. */
  region: string
  /** The service-account JSON key file, as text; without it the key's `value` is taken to be that JSON. */
  auth_credentials?: string
}

/** One API key of a provider, as config.json describes it (value resolved from env): routing's key plus what reaching the upstream takes. */
export interface ProviderKey extends BalancerKey {
  value: string
  /** Models this key serves; `["*"]` means every model. */
  models: readonly string[]
  /** Model name as the caller says it -> model name as this key's upstream knows it. */
  aliases?: Record<string, string>
  azure_key_config?: AzureKeyConfig
  bedrock_key_config?: BedrockKeyConfig
  vertex_key_config?: VertexKeyConfig
}

/** network_config of a provider, with defaults applied. */
export interface ProviderNetwork {
  base_url: string
  default_request_timeout_in_seconds: number
  max_retries: number
  retry_backoff_initial: number
  retry_backoff_max: number
  extra_headers: Record<string, string>
  /** Time to open a connection to the upstream; undici's pool gives up after it. */
  connect_timeout_in_seconds?: number
  /** A stream's time from the attempt's start to its first content event (issue 35). */
  first_token_timeout_in_seconds?: number
  /** Longest silence inside a stream (no event at all) before it counts as stalled. */
  stream_idle_timeout_in_seconds?: number
  /** The longest Retry-After waited out on a key nothing else can replace. */
  max_retry_after_in_seconds?: number
}

/** What an adapter needs to know about its provider. */
export interface ProviderInit {
  name: string
  type: ProviderType
  network: ProviderNetwork
}

/** An OpenAI chat.completions request body: the fields the gateway reads typed, the rest passed through untouched. */
export interface ChatRequestBody {
  model: string
  messages: ChatMessage[]
  stream?: boolean
  [field: string]: unknown
}

export interface ChatMessage {
  role: string
  content?: unknown
  [field: string]: unknown
}

/** One upstream attempt: a body for one model, sent with one key. */
export interface AttemptRequest extends Attempt {
  /** The body as the caller sent it (the adapter sets `model` to the upstream's model name). */
  body: ChatRequestBody
}

/** What every attempt, chat or surface, carries besides its body. */
interface Attempt {
  /** Model name as the caller asked for it (before the key's aliases). */
  model: string
  key: ProviderKey
  /** Aborted when the caller goes away or the attempt times out. */
  signal: Cancellation
  /** W3C trace context of this attempt, sent upstream as the `traceparent` header (set only while the gateway traces). */
  traceparent?: string | undefined
}

/** What every success carries. */
interface Success extends AttemptNotes {
  ok: true
  status: number
  /** The upstream's headers; of a JSON answer only the rate-limit ones (x-ratelimit-*, anthropic-ratelimit-*), all it is read for. */
  headers: Record<string, string>
  /** The key's rate-limit window, when the headers say it is (nearly) spent: the gateway backs the key off. */
  rateLimit: RateLimitExhaustion | null
}

/** A successful non-streaming answer: the upstream's own bytes (passed through unparsed) or an object we built, with its token counts (read by the adapter; null when it reports none). */
export type JsonSuccess = Success & { kind: 'json'; usage: TokenUsage | null } & ({ bytes: Buffer; body?: undefined } | { body: Record<string, unknown>; bytes?: undefined })

/**
 * A successful streaming answer: `events` yields each event's JSON text (never `[DONE]`),
 * completes when the upstream finished the answer, and rejects with a `StreamFailure` when it broke.
 */
export interface StreamSuccess extends Success {
  kind: 'stream'
  events: AsyncIterable<string>
}

/** A failed attempt: the normalized failure and the upstream's headers. */
export interface AttemptFailed extends AttemptNotes {
  ok: false
  failure: AttemptFailure
  headers: Record<string, string>
  /** Nothing was sent: the body cannot be said in this provider's format (the caller's 400, with `failure.message`). */
  notSent?: true
}

export type AttemptResult = JsonSuccess | StreamSuccess | AttemptFailed

/** `notes`: what a translation left out or did not send, as sentences for the request's routing log. */
export interface AttemptNotes {
  notes?: readonly string[]
}

/** The inference surfaces besides chat completions (issue 17). */
export type Surface = 'messages' | 'count_tokens' | 'responses' | 'embeddings'

/** One attempt on a surface other than chat, the caller's body in that surface's format (surfaces/index.ts). */
export interface SurfaceRequest extends Attempt {
  surface: Surface
  /** The body as the caller sent it (the adapter sets `model` to the upstream's model name). */
  body: Record<string, unknown>
  stream: boolean
  /** Caller headers forwarded unchanged to a native upstream (`anthropic-version`, `anthropic-beta`). */
  headers: Record<string, string>
}

/** An upstream adapter: one attempt, one HTTP call. `send` never throws: it resolves to one normalized outcome (send.ts). */
export interface ProviderAdapter {
  readonly name: string
  readonly type: ProviderType
  send(request: AttemptRequest): Promise<AttemptResult>
  /** True when the upstream speaks `surface` itself (no translation). */
  speaks?(surface: Surface): boolean
  /** Sends a surface request natively; success bodies and stream events are in that surface's format. */
  sendNative?(request: SurfaceRequest): Promise<AttemptResult>
  /** True when the upstream continues an answer from an assistant prefill for `model` (docs/routing.md, "How a request is served"). */
  continues?(model: string): boolean
  close(): Promise<void>
}
