/**
 * Fake OpenAI, Azure OpenAI, Anthropic, Amazon Bedrock, Gemini API and Vertex AI upstreams with
 * scriptable faults.
 *
 * One plain `node:http` server speaks the providers' real wire formats
 * (bodies, headers, SSE streams, error shapes) so the gateway can be tested,
 * demonstrated and benchmarked without real keys. Rules script latency,
 * errors, rate limits and broken connections per provider, key and model;
 * a control API under `/_sim/` changes them at run time.
 *
 * Rule semantics: every rule that matches a request (its `provider`, `key`
 * and `model` are each absent or equal) is applied in list order, and a later
 * rule's fields override an earlier one's, field by field. So a broad rule
 * can set latency for everything while a later narrow one adds a fault for
 * one key. A rule with `times` counts down on every request it matches and
 * stops matching at zero.
 */
import type { FaultPreset } from './rules/presets.ts'

export type { FaultPreset }

/** The upstream dialects the simulator speaks. */
export type ProviderName = 'openai' | 'azure' | 'anthropic' | 'bedrock' | 'gemini' | 'vertex'

/** A preset with options: `retry_after_s` for `rate_limit`, `after_ms` for `timeout`, `message` to replace the provider's words. */
export interface FaultPresetOptions {
  preset: FaultPreset
  retry_after_s?: number
  message?: string
  /** For `timeout` and `stream_stall`: destroy the connection after this long instead of holding it forever. */
  after_ms?: number
  /**
   * For the stream faults: how many content events go out before the fault (`stream_cut`,
   * `stream_stall`, `stream_no_done`: then it breaks; `stream_malformed`: the next one is
   * malformed). Content events are the ones carrying text or a tool call's arguments; the
   * preamble before them always goes out. Default: half of them (all, for `stream_no_done`).
   */
  after_chunks?: number
}

/** A literal answer: sent as given (a string body verbatim, anything else as JSON). */
export interface RawFault {
  status: number
  headers?: Record<string, string>
  body: unknown
}

/** What to answer instead of a completion. */
export type FaultSpec = FaultPreset | FaultPresetOptions | RawFault

/** Time to response headers (or the first stream chunk), in milliseconds. */
export type LatencySpec = number | { mean: number; jitter?: number } | { p50: number; p99: number }

/** One scripted behaviour; see the package comment for how rules combine. */
export interface SimulatorRule {
  provider?: ProviderName
  /** The exact API key the request carries. */
  key?: string
  /** The request's model, or the Azure deployment name. */
  model?: string
  latency_ms?: LatencySpec
  /** Delay between stream chunks. */
  chunk_delay_ms?: number
  /** Chance (0..1) of answering with `error` (default `server_error`). */
  error_rate?: number
  error?: FaultSpec
  /** Always answer with this fault. */
  fault?: FaultSpec
  /** Apply to this many matching requests, then stop matching. */
  times?: number
  /** Tokens per minute per key (sliding window); over it answers the provider's 429. */
  tpm?: number
  /** Requests per minute per key (sliding window). */
  rpm?: number
  /** Size of the reply in tokens (reported exactly in usage). */
  completion_tokens?: number
  /** A stream's headers and preamble go out at once, its first content event this long after (a slow first token). */
  first_token_delay_ms?: number
  /** A request whose conversation ends with the assistant's text (a prefill) is refused with the provider's 400. */
  rejects_prefill?: boolean
  /**
   * Anthropic beta flags refused with Anthropic's 400 ("Unexpected value(s) `x` for the
   * `anthropic-beta` header") when the request's `anthropic-beta` carries any of them, as Claude
   * on Vertex AI answers flags it does not serve.
   */
  refuses_betas?: string[]
}

/** One request the simulator answered (or that ended before an answer). */
export interface RecordedRequest {
  /** Epoch milliseconds when the request ended. */
  at: number
  provider: ProviderName
  /** The whole key; only kept in process, never served by the control API. */
  key: string
  key_suffix: string
  /** The request's model, or the Azure deployment name. */
  model: string
  stream: boolean
  /** HTTP status sent, or 0 when the connection ended before any status. */
  status: number
  /** True when the client went away before the answer was complete. */
  aborted: boolean
  /** The fault that shaped the answer, if any (preset name, `raw`, or `rate_limit`). */
  fault?: string
  /** The W3C `traceparent` header the request carried, if any (a gateway that traces sends one per attempt). */
  traceparent?: string
  /** The API path asked (`/v1/messages`, `/v1/responses`, ...), without the query. */
  path?: string
  /** `anthropic-version` and `anthropic-beta` as received (Anthropic paths), so a test can see what a gateway forwarded. */
  anthropic_version?: string
  anthropic_beta?: string
  /** The request's conversation ended with the assistant's text: it asked for a continuation (a prefill). */
  prefill?: true
}

/** Options for {@link createSimulator}. */
export interface SimulatorInit {
  /** 0 (default) picks a free port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
  /** Seed of the random source behind latency and error_rate (default 1). */
  seed?: number
  rules?: SimulatorRule[]
  /** Lifetime of the OAuth2 access tokens `POST /token` issues (Vertex AI), in seconds; default 3600 as at Google. */
  token_lifetime_s?: number
}

/** A running simulator. */
export type Simulator = Awaited<ReturnType<typeof import('./server/server.ts').createSimulator>>

export { RuleError } from './rules/validate.ts'

export { createSimulator } from './server/server.ts'
export { simulatorSecretKey } from './bedrock/sigv4.ts'
export { simulatorServiceAccount } from './google/service-account.ts'
/** The simulator's seeded random source (mulberry32), for anyone who wants the same draws every run. */
export { seededRandom } from './rules/random.ts'
