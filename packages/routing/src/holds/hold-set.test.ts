import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { differingBuckets } from './digest.ts'
import { HOLD_REASONS } from '../failures/failure-class.ts'
import { holdId, type HoldEntry } from './entry.ts'
import { HoldSet, TOMBSTONE_LIFETIME_MS, wins } from './hold-set.ts'
import { parseHoldEntry } from './snapshot.ts'

/** Entries over few targets and few versions, so collisions on both are common. */
const entryArbitrary: fc.Arbitrary<HoldEntry> = fc
  .record({
    provider: fc.constantFrom('openai', 'azure'),
    keyId: fc.constantFrom('k1', 'k2'),
    model: fc.constantFrom(null, 'gpt-4o'),
    released: fc.boolean(),
    reason: fc.constantFrom(...HOLD_REASONS),
    rung: fc.nat(4),
    wallMs: fc.integer({ min: 0, max: 20 }),
    counter: fc.nat(2),
    nodeId: fc.constantFrom('node-a', 'node-b', 'node-c'),
  })
  .map(({ provider, keyId, model, released, reason, rung, wallMs, counter, nodeId }) => ({
    provider,
    keyId,
    model,
    state: released ? 'released' : 'held',
    reason,
    message: `${reason} at ${wallMs}`,
    since: wallMs,
    waitStartedAt: wallMs,
    baseWaitMs: 30_000,
    waitSource: 'ladder',
    rung,
    checks: rung,
    releasedAt: released ? wallMs : null,
    releaseCause: released ? 'served' : null,
    version: { wallMs, counter, nodeId },
  }))

function setOf(...batches: HoldEntry[][]): HoldSet {
  const set = new HoldSet()
  for (const batch of batches) set.merge(batch)
  return set
}

function sameSet(left: HoldSet, right: HoldSet): void {
  const byId = (entries: HoldEntry[]) => [...entries].sort((a, b) => holdId(a).localeCompare(holdId(b)))
  expect(byId(left.entries())).toEqual(byId(right.entries()))
  expect(left.digest()).toEqual(right.digest())
}

const batch = fc.array(entryArbitrary, { maxLength: 12 })

describe('HoldSet merge (properties)', () => {
  it('is commutative', () => {
    fc.assert(fc.property(batch, batch, (first, second) => sameSet(setOf(first, second), setOf(second, first))))
  })

  it('is associative', () => {
    fc.assert(
      fc.property(batch, batch, batch, (first, second, third) => {
        const left = setOf(setOf(first, second).entries(), third)
        const right = setOf(first, setOf(second, third).entries())
        sameSet(left, right)
      }),
    )
  })

  it('is idempotent: merging what is already there changes nothing', () => {
    fc.assert(
      fc.property(batch, (entries) => {
        const set = setOf(entries)
        const before = set.digest()
        expect(set.merge(entries)).toEqual([])
        expect(set.merge(set.entries())).toEqual([])
        expect(set.digest()).toEqual(before)
      }),
    )
  })

  it('converges on nodes that receive the same entries in any order, with duplicates', () => {
    fc.assert(
      fc.property(batch, fc.array(fc.nat(), { minLength: 24, maxLength: 24 }), (entries, keys) => {
        const shuffled = entries.map((entry, index) => ({ entry, key: keys[index] ?? index })).sort((a, b) => a.key - b.key)
        const nodeA = setOf(entries)
        const nodeB = new HoldSet()
        for (const { entry } of shuffled) {
          nodeB.apply(entry)
          nodeB.apply(entry)
        }
        sameSet(nodeA, nodeB)
      }),
    )
  })

  it('keeps, for each target, an entry that no entry merged into it beats', () => {
    fc.assert(
      fc.property(batch, (entries) => {
        const set = setOf(entries)
        for (const entry of entries) {
          const kept = set.get(entry)!
          expect(wins(entry, kept)).toBe(false)
          // Among the entries of the hold it kept, a release, else the highest rung.
          const sameHold = entries.filter((other) => holdId(other) === holdId(kept) && other.since === kept.since && other.reason === kept.reason)
          if (sameHold.some((other) => other.state === 'released')) expect(kept.state).toBe('released')
          else expect(kept.rung).toBe(Math.max(...sameHold.map((other) => other.rung)))
        }
      }),
    )
  })
})

describe('HoldSet releases', () => {
  const held: HoldEntry = {
    provider: 'openai',
    keyId: 'k1',
    model: null,
    state: 'held',
    reason: 'credential',
    message: 'Incorrect API key provided',
    since: 1_000,
    waitStartedAt: 1_000,
    baseWaitMs: 30_000,
    waitSource: 'ladder',
    rung: 0,
    checks: 0,
    releasedAt: null,
    releaseCause: null,
    version: { wallMs: 1_000, counter: 0, nodeId: 'node-a' },
  }
  const release: HoldEntry = { ...held, state: 'released', releasedAt: 2_000, releaseCause: 'operator', version: { wallMs: 2_000, counter: 0, nodeId: 'node-b' } }
  const heldAgain: HoldEntry = { ...held, since: 3_000, waitStartedAt: 3_000, version: { wallMs: 3_000, counter: 0, nodeId: 'node-c' } }

  it('a newer release wins over an older hold, whichever arrives first', () => {
    expect(setOf([held], [release]).get(held)).toEqual(release)
    expect(setOf([release], [held]).get(held)).toEqual(release)
  })

  it('a newer hold wins over an older release, whichever arrives first', () => {
    expect(setOf([release], [heldAgain]).get(held)).toEqual(heldAgain)
    expect(setOf([heldAgain], [release]).get(held)).toEqual(heldAgain)
  })

  it('a release wins over every copy of its hold, even one renewed later elsewhere (no released hold comes back)', () => {
    const renewedLater: HoldEntry = { ...held, rung: 1, checks: 1, waitStartedAt: 2_500, version: { wallMs: 2_500, counter: 0, nodeId: 'node-c' } }
    expect(setOf([release], [renewedLater]).get(held)).toEqual(release)
    expect(setOf([renewedLater], [release]).get(held)).toEqual(release)
  })

  it('keeps the higher rung when two sides of a partition each climbed the same hold, whichever climbed last', () => {
    const sideA: HoldEntry = { ...held, rung: 2, checks: 2, waitStartedAt: 1_600, baseWaitMs: 120_000, version: { wallMs: 1_600, counter: 0, nodeId: 'node-a' } }
    const sideB: HoldEntry = { ...held, rung: 1, checks: 1, waitStartedAt: 1_900, baseWaitMs: 60_000, version: { wallMs: 1_900, counter: 0, nodeId: 'node-b' } }
    expect(setOf([sideA], [sideB]).get(held)).toEqual(sideA)
    expect(setOf([sideB], [sideA]).get(held)).toEqual(sideA)
    // Equal rungs: the later check's copy.
    const sideC: HoldEntry = { ...sideA, waitStartedAt: 2_000, version: { wallMs: 2_000, counter: 0, nodeId: 'node-c' } }
    expect(setOf([sideC], [sideA]).get(held)).toEqual(sideC)
  })

  it('a hold placed later wins over an earlier one at the same place, whatever its rung', () => {
    const climbedHigh: HoldEntry = { ...held, rung: 3, checks: 3, version: { wallMs: 2_900, counter: 0, nodeId: 'node-a' } }
    expect(setOf([heldAgain], [climbedHigh]).get(held)).toEqual(heldAgain)
  })

  it('drops tombstones after their lifetime, never active holds', () => {
    const set = setOf([release, { ...held, keyId: 'k2' }])
    expect(set.collect(2_000 + TOMBSTONE_LIFETIME_MS - 1)).toEqual([])
    expect(set.collect(2_000 + TOMBSTONE_LIFETIME_MS)).toEqual([release])
    expect(set.entries()).toEqual([{ ...held, keyId: 'k2' }])
    expect(set.digest()).toEqual(setOf([{ ...held, keyId: 'k2' }]).digest())
  })

  it('stores copies that cannot be changed from outside', () => {
    const entry = { ...held, version: { ...held.version } }
    const set = setOf([entry])
    entry.rung = 5
    expect(set.get(held)!.rung).toBe(0)
    expect(() => {
      ;(set.get(held) as HoldEntry).rung = 5
    }).toThrow(TypeError)
  })
})

describe('anti-entropy', () => {
  it('finds the buckets that differ, and pulling them makes the digests equal', () => {
    fc.assert(
      fc.property(batch, batch, (shared, extra) => {
        const nodeA = setOf(shared, extra)
        const nodeB = setOf(shared)
        const buckets = differingBuckets(nodeA.digest(), nodeB.digest())
        nodeB.merge(nodeA.entriesInBuckets(buckets))
        nodeA.merge(nodeB.entriesInBuckets(buckets))
        sameSet(nodeA, nodeB)
      }),
    )
  })

  it('sees a difference when one node has an entry the other lacks', () => {
    const [entry] = fc.sample(entryArbitrary, { numRuns: 1, seed: 7 })
    const buckets = differingBuckets(setOf([entry!]).digest(), new HoldSet().digest())
    expect(buckets).toHaveLength(1)
  })
})

describe('entries read back from JSON', () => {
  it('round-trip to an equal set', () => {
    fc.assert(
      fc.property(batch, (entries) => {
        const set = setOf(entries)
        const parsed: (HoldEntry | null)[] = JSON.parse(JSON.stringify(set.entries())).map(parseHoldEntry)
        expect(parsed).not.toContain(null)
        sameSet(setOf(parsed as HoldEntry[]), set)
      }),
    )
  })

  it('drops malformed entries', () => {
    const [entry] = fc.sample(entryArbitrary, { numRuns: 1, seed: 3 })
    const bad = [{ ...entry, reason: 'transient' }, { ...entry, version: { wallMs: 1 } }, { ...entry, model: 7 }, 'nonsense']
    expect([entry, ...bad].map(parseHoldEntry)).toEqual([entry, null, null, null, null])
  })
})
