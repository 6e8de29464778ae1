/**
 * The hold set as a mergeable value: per hold target, the greatest entry in one total order (`wins`),
 * so merge is commutative, associative and idempotent (design.md, "Cluster model").
 */
import { compareVersions } from './clock.ts'
import { DigestAccumulator, bucketOf, type HoldDigest } from './digest.ts'
import { canonicalEntry, holdId, type HoldEntry, type HoldTarget } from './entry.ts'

/** How long a tombstone is kept: well past any older copy still travelling and the 10-minute window to resume a rung. */
export const TOMBSTONE_LIFETIME_MS = 60 * 60 * 1000

/**
 * True when `incoming` should replace `current`. Entries of one place are ordered:
 * 1. by the hold they belong to: the one placed later (`since`, then reason) wins; a node that
 *    places a hold where another was starts it after that one (settle.ts), so a hold placed
 *    after a release wins over it, however the nodes' clocks differ;
 * 2. within one hold (placed once, renewed by checks, maybe released): its release wins over
 *    every copy of it still held, whatever their versions, so no released hold comes back;
 * 3. then the higher rung: two sides of a partition that each climbed the same hold's ladder
 *    keep the higher rung, even when the lower one was climbed last (issue 18);
 * 4. then the version (checks that renewed it without a climb), and, for two different
 *    entries under one version (never from honest nodes), the content, so merge stays a join.
 */
export function wins(incoming: HoldEntry, current: HoldEntry): boolean {
  if (incoming.since !== current.since) return incoming.since > current.since
  if (incoming.reason !== current.reason) return incoming.reason > current.reason
  const ended = (entry: HoldEntry) => (entry.state === 'released' ? 1 : 0)
  if (ended(incoming) !== ended(current)) return ended(incoming) > ended(current)
  if (incoming.rung !== current.rung) return incoming.rung > current.rung
  const order = compareVersions(incoming.version, current.version)
  if (order !== 0) return order > 0
  return canonicalEntry(incoming) > canonicalEntry(current)
}

/** A set of holds and tombstones, one entry per target, merged as `wins` orders them. */
export class HoldSet {
  private readonly byId = new Map<string, HoldEntry>()
  private readonly fingerprint = new DigestAccumulator()

  /** Takes `entry` if it is newer than what the set has for its target. Returns true when the set changed. */
  apply(entry: HoldEntry): boolean {
    const id = holdId(entry)
    const current = this.byId.get(id)
    if (current && !wins(entry, current)) return false
    if (current) this.fingerprint.toggle(id, current)
    this.byId.set(id, Object.freeze({ ...entry, version: Object.freeze({ ...entry.version }) }))
    this.fingerprint.toggle(id, entry)
    return true
  }

  /** Applies every entry; returns the ones that changed the set, as stored (later duplicates collapse). */
  merge(entries: Iterable<HoldEntry>): HoldEntry[] {
    const changed = new Map<string, HoldEntry>()
    for (const entry of entries) {
      if (this.apply(entry)) changed.set(holdId(entry), this.byId.get(holdId(entry))!)
    }
    return [...changed.values()]
  }

  /** The entry (hold or tombstone) for `target`, if any. */
  get(target: HoldTarget): HoldEntry | undefined {
    return this.byId.get(holdId(target))
  }

  /** Every entry, tombstones included: the full state a joining node pulls. */
  entries(): HoldEntry[] {
    return [...this.byId.values()]
  }

  /** Per-bucket fingerprint of every (target, version) in the set. */
  digest(): HoldDigest {
    return this.fingerprint.digest()
  }

  /** The entries in the given digest buckets: the answer to a peer whose digest differs there. */
  entriesInBuckets(buckets: readonly number[]): HoldEntry[] {
    const wanted = new Set(buckets)
    return this.entries().filter((entry) => wanted.has(bucketOf(holdId(entry))))
  }

  /** Drops tombstones older than TOMBSTONE_LIFETIME_MS (by version time). Returns what was dropped. */
  collect(now: number): HoldEntry[] {
    const dropped: HoldEntry[] = []
    for (const [id, entry] of this.byId) {
      if (entry.state !== 'released' || now - entry.version.wallMs < TOMBSTONE_LIFETIME_MS) continue
      this.byId.delete(id)
      this.fingerprint.toggle(id, entry)
      dropped.push(entry)
    }
    return dropped
  }
}
