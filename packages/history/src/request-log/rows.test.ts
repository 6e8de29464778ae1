import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { RequestRecord } from './record.ts'
import { batchOf, rowBytes } from './rows.ts'
import { ENTRY_VERSION, recordOfRow, type CompactEntry, type EntryRow } from './entry.ts'
import { BINARY_COPY_HEADER, BINARY_COPY_TRAILER } from '../writer/binary-sink.ts'
import { COPY_HEADER_BYTES } from '../writer/copy.ts'
import { anyRecord } from '../../test/any-record.ts'

/** The fields of one binary COPY tuple: each field's bytes, null for NULL. */
function fieldsOf(tuple: Buffer): (Buffer | null)[] {
  const count = tuple.readInt16BE(0)
  const fields: (Buffer | null)[] = []
  let at = 2
  for (let index = 0; index < count; index++) {
    const length = tuple.readInt32BE(at)
    at += 4
    if (length < 0) fields.push(null)
    else {
      fields.push(tuple.subarray(at, at + length))
      at += length
    }
  }
  expect(at).toBe(tuple.length)
  return fields
}

const text = (field: Buffer | null) => (field === null ? null : field.toString('utf8'))
/** What Postgres keeps of a string: its UTF-8 (a lone surrogate as U+FFFD), NUL as U+FFFD. */
const stored = (value: string | null) => (value === null ? null : Buffer.from(value.replaceAll('\0', '\uFFFD'), 'utf8').toString('utf8'))
const int4 = (field: Buffer | null) => (field === null ? null : field.readInt32BE(0))
const bool = (field: Buffer | null) => field?.[0] === 1
const textArray = (field: Buffer): string[] => {
  if (field.readInt32BE(0) === 0) return []
  expect(field.readInt32BE(8)).toBe(25)
  const length = field.readInt32BE(12)
  const values: string[] = []
  let at = 20
  for (let index = 0; index < length; index++) {
    const size = field.readInt32BE(at)
    values.push(field.toString('utf8', at + 4, at + 4 + size))
    at += 4 + size
  }
  return values
}

/** The entry array of `record`, as plain values (what `encodeRow` must write, as JSON). */
function compactEntry(record: RequestRecord): CompactEntry {
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

/** The columns of `record` as Postgres hands them back (text as stored), and `entry` as parsed JSON. */
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

describe('a request log row (COPY binary)', () => {
  it('holds every column of the record, field by field, as Postgres will read it', () => {
    fc.assert(
      fc.property(anyRecord, (record) => {
        const fields = fieldsOf(rowBytes(record))
        expect(fields).toHaveLength(25)
        const [at, id, ...rest] = fields
        expect(Number(at!.readBigInt64BE(0) / 1000n) + 946_684_800_000).toBe(Date.parse(record.at))
        expect(id!.toString('hex')).toBe(record.id.replaceAll('-', '').toLowerCase())
        const { requested, served, routing } = record
        const ids: string[] = []
        if (served.key_id !== null) ids.push(served.key_id)
        for (const attempt of record.attempts) if (!ids.includes(attempt.key_id)) ids.push(attempt.key_id)
        const tokens = record.usage?.total_tokens ?? null
        expect([
          ...rest.slice(0, 11).map(text), rest[11] === null ? null : textArray(rest[11]!), int4(rest[12]!), text(rest[13]!), rest[14]!.readDoubleBE(0), int4(rest[15]!),
          bool(rest[16]!), text(rest[17]!), bool(rest[18]!), bool(rest[19]!), bool(rest[20]!), text(rest[21]!), text(rest[22]!),
        ]).toEqual([
          ...[record.node_id, record.region, record.surface, record.gateway_key, requested.provider, requested.model, requested.session_id, served.provider, served.model, served.key_id, served.key_name].map(stored),
          ids.length === 0 || (ids.length === 1 && ids[0] === served.key_id) ? null : ids.map(stored), record.status, stored(record.failure_class), record.latency_ms, tokens !== null && tokens <= 0x7fffffff ? tokens : null,
          record.stream, routing.picked_by, routing.moved_off !== null, routing.check !== null, routing.added_fallback_served, text(rest[21]!),
          JSON.stringify(compactEntry(record)),
        ])
      }),
      { numRuns: 300 },
    )
  })

  it('keeps in search, lowercased, every part search matches that no column holds as it is, and nothing else', () => {
    fc.assert(
      fc.property(anyRecord, (record) => {
        const fields = fieldsOf(rowBytes(record))
        const search = text(fields[23]!) as string
        const { requested, served } = record
        // What query.ts matches besides `search`, as Postgres holds it (the id as uuid text).
        const columns = [requested.session_id, requested.provider, requested.model, served.provider, served.model, record.gateway_key, served.key_id, served.key_name, ...(fields[13] === null ? [] : textArray(fields[13]!))]
          .filter((value): value is string => value !== null)
          .map(stored)
        // Every part search matches, in the order rows.ts writes them.
        const parts = [requested.session_id, requested.provider, requested.model, served.provider, served.model, record.gateway_key, record.message]
        for (const attempt of record.attempts) parts.push(attempt.key_id, attempt.key_name)
        const lowered = parts.filter((part): part is string => !!part).map((part) => stored(part.toLowerCase()) as string)
        for (const part of lowered) expect(search.includes(`${part}\n`) || columns.includes(part)).toBe(true)
        if (record.message) expect(search).toContain(`${stored(record.message.toLowerCase())}\n`)
        // Nothing else: the column is some of those parts, each with its newline, in order.
        let at = 0
        for (const part of lowered) if (search.startsWith(`${part}\n`, at)) at += part.length + 1
        expect(at).toBe(search.length)
      }),
      { numRuns: 300 },
    )
  })

  it("writes an entry that, with the columns, reads back as the record, in the record's key order", () => {
    fc.assert(
      fc.property(anyRecord, (record) => {
        const detail = text(fieldsOf(rowBytes(record))[24]!) as string
        const read = recordOfRow(rowOf(record, JSON.parse(detail)))
        // What JSON makes of the record (NaN and the infinities read as null), key order included.
        expect(JSON.stringify(read)).toBe(JSON.stringify(record))
      }),
      { numRuns: 200 },
    )
  })

  it('refuses a record whose time or id is not one, so the listener drops it alone instead of the batch failing', () => {
    const [record] = fc.sample(anyRecord, 1) as [RequestRecord]
    expect(() => rowBytes({ ...record, at: 'yesterday' })).toThrow(/not a time/)
    expect(() => rowBytes({ ...record, id: 'req-1' })).toThrow(/not a uuid/)
    expect(() => rowBytes({ ...record, id: 'zzzzzzzz-d352-7327-8d67-8405e4d0512f' })).toThrow(/not a hex digit/)
  })

  it('reads a row written before the entry array (the whole record as JSON) as it is', () => {
    const whole = { id: 'x', routing: { log: [] } }
    expect(recordOfRow({ ...rowOf(fc.sample(anyRecord, 1)[0] as RequestRecord, null), entry: whole })).toBe(whole)
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
    const tuple = rowBytes(typical)
    const detail = fieldsOf(tuple)[24]!.length
    expect(tuple.length).toBeLessThan(0.6 * (tuple.length - detail + JSON.stringify(typical).length))
  })
})

describe('request log rows framed for COPY', () => {
  it('are the tuples of any records, one larger than the encoder\'s first buffer among them, framed as one binary COPY stream', () => {
    fc.assert(
      fc.property(fc.array(anyRecord, { minLength: 1, maxLength: 6 }), fc.nat(5), (records, large) => {
        const index = large % records.length
        const record = records[index]!
        records[index] = { ...record, content: { request: 'é'.repeat(100_000), response: null, truncated: false } }
        const tuples = records.map(rowBytes)
        expect(JSON.parse(text(fieldsOf(tuples[index]!)[24]!) as string)).toEqual(JSON.parse(JSON.stringify(compactEntry(records[index]!))))
        const batch = batchOf(tuples)
        expect(batch.subarray(COPY_HEADER_BYTES, COPY_HEADER_BYTES + BINARY_COPY_HEADER.length).equals(BINARY_COPY_HEADER)).toBe(true)
        expect(batch.subarray(batch.length - BINARY_COPY_TRAILER.length).equals(BINARY_COPY_TRAILER)).toBe(true)
        expect(batch.subarray(COPY_HEADER_BYTES + BINARY_COPY_HEADER.length, batch.length - BINARY_COPY_TRAILER.length).equals(Buffer.concat(records.map(rowBytes)))).toBe(true)
      }),
      { numRuns: 100 },
    )
  })
})
