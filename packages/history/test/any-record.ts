/**
 * Any request record fast-check can think of, for the request log's tests: every text field any
 * text at all (quotes, backslashes, tabs, newlines, control characters and NUL, emoji, lone
 * surrogates), numbers including NaN and the infinities where a record may hold them.
 */
import fc from 'fast-check'
import type { FailureClass } from '@switchboard/routing'
import type { RequestRecord } from '../src/request-log/record.ts'

// Any text at all: quotes, backslashes, tabs, newlines, control characters, emoji, lone surrogates.
const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.constantFrom('openai', 'OpenAI', 'gpt-4o', 'GPT-4o-Mini', 'AZ', 'k1', 'a"b', 'c\\d', 'tab\there', 'line\nbreak', 'ΟΔΟΣ', 'Ünïcödé 🚧', '\\N', ''))
const nullable = <T,>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: null })
// Any text as a failure class too: the row encoder must carry whatever it is given.
const anyClass = nullable(anyText) as fc.Arbitrary<FailureClass | null>
const number = fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.double({ noDefaultInfinity: false }))

const attempt = fc.record({ provider: anyText, model: anyText, key_id: anyText, key_name: anyText, status: fc.integer({ min: 100, max: 599 }), failure_class: anyClass, latency_ms: number, wait_hint_ms: nullable(number) })
export const anyRecord: fc.Arbitrary<RequestRecord> = fc.record({
  id: fc.uuid(),
  at: fc.date({ min: new Date('2026-01-01'), max: new Date('2027-01-01'), noInvalidDate: true }).map((date) => date.toISOString()),
  node_id: anyText,
  region: anyText,
  surface: anyText,
  gateway_key: nullable(anyText),
  requested: fc.record({ provider: nullable(anyText), model: anyText, fallbacks: fc.array(anyText, { maxLength: 3 }), session_id: nullable(anyText) }),
  served: fc.record({ provider: nullable(anyText), model: nullable(anyText), key_id: nullable(anyText), key_name: nullable(anyText) }),
  status: fc.integer({ min: 100, max: 599 }),
  failure_class: anyClass,
  message: nullable(anyText),
  latency_ms: fc.integer({ min: 0, max: 100_000 }),
  ttft_ms: nullable(number),
  usage: nullable(fc.record({ prompt_tokens: fc.nat(), completion_tokens: fc.nat(), total_tokens: fc.nat() })),
  stream: fc.boolean(),
  attempts: fc.array(attempt, { maxLength: 3 }),
  routing: fc.record({
    picked_by: fc.constantFrom('routing' as const, 'caller' as const),
    moved_off: nullable(fc.record({ provider: anyText, reason: anyText })),
    skipped_keys: fc.array(fc.record({ provider: anyText, model: anyText, key_id: anyText, key_name: anyText, reason: anyText }), { maxLength: 3 }),
    check: nullable(fc.record({ key_id: anyText, key_name: anyText, provider: anyText, model: anyText, outcome: fc.constantFrom('served' as const, 'refused_again' as const, 'inconclusive' as const, 'not_sent' as const) })),
    added_fallback_served: fc.boolean(),
    session_kept: nullable(fc.boolean()),
    pinned_kept_failed: fc.boolean(),
    log: fc.array(anyText, { maxLength: 4 }),
  }),
  content: nullable(fc.record({ request: nullable(anyText), response: nullable(anyText), truncated: fc.boolean() })),
})

