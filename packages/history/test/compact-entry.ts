/** The request log's `detail` array built as plain values: what rows.test.ts holds `encodeRow`'s bytes to. */
import { ENTRY_VERSION, type CompactEntry } from '../src/request-log/entry.ts'
import type { RequestRecord } from '../src/request-log/record.ts'

/** The entry array of `record`, as plain values (what `encodeRow` writes, as JSON). */
export function compactEntry(record: RequestRecord): CompactEntry {
  const { usage, routing, content } = record
  return [
    ENTRY_VERSION,
    record.requested.fallbacks,
    record.message,
    record.ttft_ms,
    usage === null ? null : [usage.prompt_tokens, usage.completion_tokens, usage.total_tokens],
    record.attempts.map((attempt) => [attempt.provider, attempt.model, attempt.key_id, attempt.key_name, attempt.status, attempt.failure_class, attempt.latency_ms, attempt.wait_hint_ms]),
    routing.moved_off === null ? null : [routing.moved_off.provider, routing.moved_off.reason],
    routing.skipped_keys.map((key) => [key.provider, key.model, key.key_id, key.key_name, key.reason]),
    routing.check === null ? null : [routing.check.key_id, routing.check.key_name, routing.check.provider, routing.check.model, routing.check.outcome],
    routing.session_kept,
    routing.pinned_kept_failed,
    routing.log,
    content === null ? null : [content.request, content.response, content.truncated],
  ]
}
