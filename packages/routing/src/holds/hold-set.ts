/**
 * The hold set as a mergeable value: a map from hold target to its newest entry, where merge
 * keeps the entry with the highest version (design.md, "Cluster model"). Merge is commutative,
 * associative and idempotent, so nodes that see the same entries in any order, any number of
 * times, end with the same set and the same digest.
 */
import { compareVersions } from './clock.ts'
import { DigestAccumulator, bucketOf, type HoldDigest } from './digest.ts'
import { canonicalEntry, holdId, type HoldEntry, type HoldTarget } from './entry.ts'

/**
 * How long a tombstone is kept. It must outlive any older copy of the hold still travelling
 * (gossip retries, anti-entropy rounds, a leader's 30 s snapshot) and the 10 minute window in
 * which a released key resumes its rung; an hour covers both with a wide margin.
 */
export const TOMBSTONE_LIFETIME_MS = 60 * 60 * 1000

/** The hold set as written to Postgres and sent to a joining node. */
export interface HoldSnapshot {
  format: 1
  entries: HoldEntry[]
}

/**
 * True when `incoming` should replace `current`. Versions decide; two different entries under
 * one version cannot come from honest nodes, but ordering them by content keeps merge a join
 * even then, so nodes still converge.
 */
function wins(incoming: HoldEntry, current: HoldEntry): boolean {
  const order = compareVersions(incoming.version, current.version)
  if (order !== 0) return order > 0
  return canonicalEntry(incoming) > canonicalEntry(current)
}

function frozenCopy(entry: HoldEntry): HoldEntry {
  return Object.freeze({ ...entry, version: Object.freeze({ ...entry.version }) })
}

/** A set of holds and tombstones, one entry per target, merged by highest version. */
export class HoldSet {
  private readonly byId = new Map<string, HoldEntry>()
  private readonly fingerprint = new DigestAccumulator()

  /** Restores a set from a snapshot (see `parseHoldSnapshot` for untrusted input). */
  static fromSnapshot(snapshot: HoldSnapshot): HoldSet {
    const set = new HoldSet()
    set.merge(snapshot.entries)
    return set
  }

  /** Takes `entry` if it is newer than what the set has for its target. Returns true when the set changed. */
  apply(entry: HoldEntry): boolean {
    const id = holdId(entry)
    const current = this.byId.get(id)
    if (current && !wins(entry, current)) return false
    if (current) this.fingerprint.toggle(id, current)
    this.byId.set(id, frozenCopy(entry))
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

  /** The active holds only. */
  held(): HoldEntry[] {
    return this.entries().filter((entry) => entry.state === 'held')
  }

  /** How many entries, tombstones included. */
  get size(): number {
    return this.byId.size
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

  /** Drops tombstones older than `lifetimeMs` (by version time). Returns what was dropped. */
  collect(now: number, lifetimeMs: number = TOMBSTONE_LIFETIME_MS): HoldEntry[] {
    const dropped: HoldEntry[] = []
    for (const [id, entry] of this.byId) {
      if (entry.state !== 'released' || now - entry.version.wallMs < lifetimeMs) continue
      this.byId.delete(id)
      this.fingerprint.toggle(id, entry)
      dropped.push(entry)
    }
    return dropped
  }

  /** The whole set, tombstones included, as plain JSON-safe data. */
  toSnapshot(): HoldSnapshot {
    return { format: 1, entries: this.entries().map((entry) => ({ ...entry, version: { ...entry.version } })) }
  }
}
