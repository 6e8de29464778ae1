import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { anyRecord } from '../../test/any-record.ts'
import type { RequestRecord } from './record.ts'
import { MinuteCounts } from './minutes.ts'
import { keyIds } from './rows.ts'

/** What a record counts as, the long way: every value the facets read, as Postgres will hold it. */
function reference(record: RequestRecord): string {
  const text = (value: string | null) => (value === null ? null : value.replaceAll('\0', '\uFFFD').toWellFormed())
  const { served, routing } = record
  return JSON.stringify([
    text(record.node_id),
    text(served.provider),
    text(served.model ?? record.requested.model),
    record.status,
    text(record.failure_class),
    text(routing.picked_by),
    routing.moved_off !== null,
    routing.check !== null,
    routing.added_fallback_served,
    keyIds(record).map(text),
  ])
}

/** Records that repeat and differ in one value at a time, so the fast path meets near misses. */
const nearMisses = anyRecord.chain((base) =>
  fc.array(
    fc.oneof(
      fc.constant(base),
      fc.record({ status: fc.constantFrom(200, 429) }).map((change) => ({ ...base, ...change })),
      fc.constantFrom('k1', 'k2').map((keyId) => ({ ...base, served: { ...base.served, key_id: keyId } })),
      fc.constantFrom('k1', 'k2').map((keyId) => ({ ...base, attempts: [...base.attempts, { ...(base.attempts[0] ?? { provider: 'p', model: 'm', key_name: 'n', status: 500, failure_class: null, latency_ms: 1, wait_hint_ms: null }), key_id: keyId }] })),
      fc.boolean().map((added) => ({ ...base, routing: { ...base.routing, added_fallback_served: added } })),
      fc.boolean().map((check) => ({ ...base, routing: { ...base.routing, check: check ? { key_id: 'k1', key_name: 'n', provider: 'p', model: 'm', outcome: 'served' as const } : null } })),
      fc.boolean().map((moved) => ({ ...base, routing: { ...base.routing, moved_off: moved ? { provider: 'p', reason: 'failed' } : null } })),
      fc.constantFrom<RequestRecord['routing']['picked_by']>('routing', 'caller').map((pickedBy) => ({ ...base, routing: { ...base.routing, picked_by: pickedBy } })),
      fc.constantFrom(null, 'rate_limit').map((failureClass) => ({ ...base, failure_class: failureClass })),
      fc.constantFrom('node-1', 'node-2').map((nodeId) => ({ ...base, node_id: nodeId })),
      fc.constantFrom(null, 'openai').map((provider) => ({ ...base, served: { ...base.served, provider } })),
      fc.constantFrom(null, 'gpt-4o').map((model) => ({ ...base, served: { ...base.served, model } })),
    ),
    { minLength: 1, maxLength: 40 },
  ),
)

describe('per-minute counts', () => {
  it('counts every row once, under its minute and what it counts as, however the rows repeat', () => {
    fc.assert(
      fc.property(fc.oneof(nearMisses, fc.array(anyRecord, { minLength: 1, maxLength: 30 })), fc.integer({ min: 0, max: 3 }), (records, minutes) => {
        const counts = new MinuteCounts()
        const at = (index: number) => Date.parse('2026-12-01T12:00:00Z') + ((index * 17) % (minutes + 1)) * 60_000 + (index % 7) * 1000
        records.forEach((record, index) => counts.note(index, record, at(index)))
        const slots = records.map((_, index) => index)
        const expected = new Map<string, number>()
        records.forEach((record, index) => {
          const key = `${Math.floor(at(index) / 60_000) * 60_000} ${reference(record)}`
          expected.set(key, (expected.get(key) ?? 0) + 1)
        })
        const got = new Map<string, number>()
        const combinations = new Set<string>()
        for (const count of counts.countsOf(slots)) {
          const key = `${count.at} ${JSON.stringify([count.key.node_id, count.key.served_provider, count.key.model, count.key.status, count.key.failure_class, count.key.picked_by, count.key.moved_off, count.key.is_check, count.key.added_fallback_served, count.key.key_ids.map((id) => id.toWellFormed())])}`
          got.set(key, (got.get(key) ?? 0) + count.requests)
          // One statement upserts each minute's combination once.
          expect(combinations.has(`${count.at} ${count.key.id}`)).toBe(false)
          combinations.add(`${count.at} ${count.key.id}`)
        }
        expect(got).toEqual(expected)
      }),
      { numRuns: 300 },
    )
  })

  it('leaves out the slots it was not asked for, and names a combination by a 64-bit hash', () => {
    const counts = new MinuteCounts()
    const base: RequestRecord = fc.sample(anyRecord, { numRuns: 1, seed: 7 })[0]!
    const long = { ...base, requested: { ...base.requested, model: 'm'.repeat(5_000) }, served: { ...base.served, model: null } }
    counts.note(0, base, 0)
    counts.note(1, long, 0)
    counts.note(2, base, 0)
    const [first, ...rest] = counts.countsOf([1, 2])
    expect(rest.map((count) => count.requests)).toEqual([1])
    expect(first).toMatchObject({ requests: 1, key: { model: 'm'.repeat(5_000) } })
    expect(BigInt.asIntN(64, BigInt(first!.key.id))).toBe(BigInt(first!.key.id))
    expect(first!.key.id).not.toBe(rest.length > 0 ? counts.countsOf([2])[0]!.key.id : '')
  })
})
