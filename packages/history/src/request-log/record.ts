/**
 * One inference request as the request log keeps it (design.md, "History, incidents, request
 * log"): what the caller asked, what served it, how it ended, every attempt, and what adaptive
 * routing did to it. The gateway builds one per request after the answer is sent and hands it
 * to every `RequestRecordListener` (the request log writer, the per-minute request counts).
 * Spec: reference/adaptive-routing-overview.txt, "The request log".
 */

import type { FailureClass } from '@switchboard/routing'

/** Which API surface the request came in on. */
export type RequestSurface = 'chat_completions' | 'messages' | 'responses' | 'embeddings' | (string & {})

/** One upstream attempt, exactly as `extra_fields.attempts[]` reports it. */
export interface RecordedAttempt {
  provider: string
  model: string
  key_id: string
  key_name: string
  status: number
  failure_class: FailureClass | null
  latency_ms: number
  wait_hint_ms: number | null
}

/** A key routing left out of this request, and why (a hold's reason, or `rate_limit_window`, `failed`). */
export type SkippedKeyRecord = Pick<RecordedAttempt, 'provider' | 'model' | 'key_id' | 'key_name'> & { reason: string }

/** What the check of a held key that this request carried came to. */
export type CheckOutcome = 'served' | 'refused_again' | 'inconclusive' | 'not_sent'

/** The adaptive-routing summary of one request. */
export interface RoutingSummary {
  /** `routing` when adaptive routing chose the first provider, `caller` when the request named it (or sent its own key). */
  picked_by: 'routing' | 'caller'
  /** Set when the request named a provider and routing sent it elsewhere: that provider, and why. */
  moved_off: { provider: string; reason: string } | null
  /** Keys left out of this request's picks: held, or backed off until their rate-limit window resets. */
  skipped_keys: SkippedKeyRecord[]
  /** The check of a held key this request was, if any. */
  check: { key_id: string; key_name: string; provider: string; model: string; outcome: CheckOutcome } | null
  /** True when a fallback that routing added (not one the caller sent) served the request. */
  added_fallback_served: boolean
  /** The session's affinity: true kept on its provider and key, false moved, null no session (or nothing remembered). */
  session_kept: boolean | null
  /** True when the named provider was failed and re-routing was off, so routing kept the request on it. */
  pinned_kept_failed: boolean
  /** The routing-log lines of the request, as the operator reads them. */
  log: string[]
}

/** Token counts of the answer, when the upstream reported them. */
export interface RecordedUsage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
}

/** One request of the request log: the log entry of design.md, plus the documented additions. */
export interface RequestRecord {
  /** The request id (a UUIDv7: its first 48 bits are `at` in ms), also `x-request-id` and `extra_fields.request_id`. */
  id: string
  /** When the request arrived, ISO 8601. */
  at: string
  node_id: string
  region: string
  /** Addition: the API surface (`chat_completions`, `messages`, `responses`, `embeddings`). */
  surface: RequestSurface
  /** Addition: the name of the gateway key the caller authenticated with; null for a loopback caller while no gateway key exists. */
  gateway_key: string | null
  requested: { provider: string | null; model: string; fallbacks: string[]; session_id: string | null }
  /** What served it; for a failed request, the provider and key whose error was returned (nulls before any attempt). */
  served: { provider: string | null; model: string | null; key_id: string | null; key_name: string | null }
  status: number
  /** Null on success; the last attempt's class, or the gateway's own (`caller_fault`, `cancelled`). */
  failure_class: FailureClass | null
  /** The error message answered, null on success. */
  message: string | null
  latency_ms: number
  /** Streams: time to the first chunk sent to the caller; null otherwise. */
  ttft_ms: number | null
  usage: RecordedUsage | null
  stream: boolean
  attempts: RecordedAttempt[]
  routing: RoutingSummary
  /** Addition: the request and response bodies, only with `request_log.content: true` (each capped), else null. */
  content: { request: string | null; response: string | null; truncated: boolean } | null
}

/** Receives every request record, after the answer is sent. Must not throw or block: buffer and return. */
export type RequestRecordListener = (record: RequestRecord) => void
