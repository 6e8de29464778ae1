import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { RequestRecord } from './record.ts'
import { encodeRow } from './rows.ts'
import { compactEntry, recordOfRow, type EntryRow } from './entry.ts'
import { RowArena } from '../writer/arena.ts'
import { copyArray, copyJson, copyText } from '../writer/copy.ts'

/** The row as it was built before `encodeRow`: every field through the generic escapers, the entry array through JSON.stringify. */
function referenceRow(record: RequestRecord): string {
  const ids: string[] = []
  if (record.served.key_id !== null) ids.push(record.served.key_id)
  for (const attempt of record.attempts) if (!ids.includes(attempt.key_id)) ids.push(attempt.key_id)
  const parts = [record.id, record.requested.session_id, record.requested.provider, record.requested.model, record.served.provider, record.served.model, record.gateway_key, record.message]
  for (const attempt of record.attempts) parts.push(attempt.key_id, attempt.key_name)
  let search = ''
  for (const part of parts) if (part) search += `${part}\n`
  const bool = (value: boolean) => (value ? 't' : 'f')
  const { requested, served, routing } = record
  return `${[
    record.at, record.id, copyText(record.node_id), copyText(record.region), copyText(record.surface), copyText(record.gateway_key),
    copyText(requested.provider), copyText(requested.model), copyText(requested.session_id),
    copyText(served.provider), copyText(served.model), copyText(served.key_id), copyText(served.key_name),
    copyArray(ids), String(record.status), copyText(record.failure_class), String(record.latency_ms),
    String(record.usage?.total_tokens ?? '\\N'), bool(record.stream), routing.picked_by,
    bool(routing.moved_off !== null), bool(routing.check !== null), bool(routing.added_fallback_served),
    copyText(search.toLowerCase()), copyJson(JSON.stringify(compactEntry(record))),
  ].join('\t')}\n`
}

// Any text at all: quotes, backslashes, tabs, newlines, control characters, emoji, lone surrogates.
const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.constantFrom('openai', 'OpenAI', 'gpt-4o', 'GPT-4o-Mini', 'AZ', 'k1', 'a"b', 'c\\d', 'tab\there', 'line\nbreak', 'ΟΔΟΣ', 'Ünïcödé 🚧', '\\N', ''))
const nullable = <T,>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: null })
const number = fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.double({ noDefaultInfinity: false }))

const attempt = fc.record({ provider: anyText, model: anyText, key_id: anyText, key_name: anyText, status: fc.integer({ min: 100, max: 599 }), failure_class: nullable(anyText), latency_ms: number, wait_hint_ms: nullable(number) })
const record: fc.Arbitrary<RequestRecord> = fc.record({
  id: fc.uuid(),
  at: fc.date({ min: new Date('2026-01-01'), max: new Date('2027-01-01'), noInvalidDate: true }).map((date) => date.toISOString()),
  node_id: anyText,
  region: anyText,
  surface: anyText,
  gateway_key: nullable(anyText),
  requested: fc.record({ provider: nullable(anyText), model: anyText, fallbacks: fc.array(anyText, { maxLength: 3 }), session_id: nullable(anyText) }),
  served: fc.record({ provider: nullable(anyText), model: nullable(anyText), key_id: nullable(anyText), key_name: nullable(anyText) }),
  status: fc.integer({ min: 100, max: 599 }),
  failure_class: nullable(anyText),
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

/** The row of `entry` as the arena holds it. */
function encoded(entry: RequestRecord): string {
  const arena = new RowArena()
  return arena.text(arena.encode(encodeRow, entry))
}

/** The columns of `record` as Postgres hands them back (text as it is), and `entry` as parsed JSON. */
function rowOf(record: RequestRecord, entry: unknown): EntryRow {
  const { requested, served, routing } = record
  return {
    at: new Date(record.at), id: record.id, node_id: record.node_id, region: record.region, surface: record.surface, gateway_key: record.gateway_key,
    requested_provider: requested.provider, requested_model: requested.model, session_id: requested.session_id,
    served_provider: served.provider, served_model: served.model, served_key_id: served.key_id, served_key_name: served.key_name,
    status: record.status, failure_class: record.failure_class, latency_ms: record.latency_ms, stream: record.stream,
    picked_by: routing.picked_by, added_fallback_served: routing.added_fallback_served, entry,
  }
}

describe('a request log row', () => {
  it("writes an entry that, with the columns, reads back as the record, in the record's key order", () => {
    fc.assert(
      fc.property(record, (entry) => {
        const row = encoded(entry)
        const json = row.slice(row.lastIndexOf('\t') + 1, -1)
        const read = recordOfRow(rowOf(entry, JSON.parse(json.replaceAll('\\\\', '\\'))))
        // What JSON makes of the record (NaN and the infinities read as null), key order included.
        expect(JSON.stringify(read)).toBe(JSON.stringify(entry))
      }),
      { numRuns: 200 },
    )
  })

  it('is about half the bytes the whole record as JSON took', () => {
    const typical: RequestRecord = {
      id: '01a233db-d352-7327-8d67-8405e4d0512f', at: '2026-12-01T23:06:14.226Z', node_id: 'node-1', region: 'eu', surface: 'chat_completions', gateway_key: null,
      requested: { provider: 'openai', model: 'gpt-4o-mini', fallbacks: [], session_id: null },
      served: { provider: 'openai', model: 'gpt-4o-mini', key_id: 'openai-e36c55bb6211', key_name: 'k1' },
      status: 200, failure_class: null, message: null, latency_ms: 2, ttft_ms: null, usage: { prompt_tokens: 2, completion_tokens: 12, total_tokens: 14 }, stream: false,
      attempts: [{ provider: 'openai', model: 'gpt-4o-mini', key_id: 'openai-e36c55bb6211', key_name: 'k1', status: 200, failure_class: null, latency_ms: 1, wait_hint_ms: null }],
      routing: { picked_by: 'caller', moved_off: null, skipped_keys: [], check: null, added_fallback_served: false, session_kept: null, pinned_kept_failed: false, log: ['[loadbalancing] Provider openai for gpt-4o-mini: the provider the request named'] },
      content: null,
    }
    const row = encoded(typical)
    expect(row.length).toBeLessThan(0.6 * (row.length - (row.length - row.lastIndexOf('\t')) + JSON.stringify(typical).length))
  })

  it('reads a row written before the entry array (the whole record as JSON) as it is', () => {
    const whole = { id: 'x', routing: { log: [] } }
    expect(recordOfRow({ ...rowOf(fc.sample(record, 1)[0] as RequestRecord, null), entry: whole })).toBe(whole)
  })
})

describe('a request log row encoded into the arena', () => {
  it('is the same row, for any record, byte for byte, as the generic escapers and JSON.stringify make it, whether it fits the slab, needs a fresh one or is larger than any', () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 6 }), fc.constantFrom(256, 1024, 1 << 20), (entries, slabBytes) => {
        const arena = new RowArena({ slots: 2, slabBytes })
        const slots = entries.map((entry) => arena.encode(encodeRow, entry))
        expect(slots.map((slot) => arena.text(slot))).toEqual(entries.map((entry) => referenceRow(entry)))
        expect(arena.concat(slots).equals(Buffer.from(entries.map((entry) => referenceRow(entry)).join(''), 'utf8'))).toBe(true)
      }),
      { numRuns: 300 },
    )
  })
})
