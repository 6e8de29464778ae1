/**
 * Cheap order-independent fingerprints of a hold set, for anti-entropy: two nodes compare
 * digests and pull only the buckets that differ (design.md, "Cluster model").
 */
import { canonicalEntry, type HoldEntry } from './entry.ts'

/** How many buckets a digest has; a mismatch pulls one bucket, about 1/16 of the set. */
export const DIGEST_BUCKETS = 16

/** A set's fingerprint: one 16-hex-digit hash per bucket. Equal digests mean (almost surely) equal sets. */
export interface HoldDigest {
  buckets: string[]
}

/** 32-bit FNV-1a over the UTF-16 code units of `text`, from `seed`. */
function fnv1a(text: string, seed: number): number {
  let hash = seed >>> 0
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash
}

const SEED_LOW = 0x811c9dc5
const SEED_HIGH = 0x9747b28c

/** The bucket an entry with id `id` falls in. */
export function bucketOf(id: string): number {
  return fnv1a(id, SEED_LOW) % DIGEST_BUCKETS
}

/** Running XOR of entry hashes per bucket: independent of arrival order, and a replaced entry comes out in O(1). */
export class DigestAccumulator {
  private readonly lanes = new Uint32Array(DIGEST_BUCKETS * 2)

  /**
   * Adds or removes (XOR is its own inverse) `entry`, whose hold id is `id`. Two lanes hash its
   * whole content, not just its version, so equal digests mean equal sets whatever a peer sent.
   */
  toggle(id: string, entry: HoldEntry): void {
    const bucket = bucketOf(id)
    const text = canonicalEntry(entry)
    this.lanes[bucket * 2] = (this.lanes[bucket * 2]! ^ fnv1a(text, SEED_LOW)) >>> 0
    this.lanes[bucket * 2 + 1] = (this.lanes[bucket * 2 + 1]! ^ fnv1a(text, SEED_HIGH)) >>> 0
  }

  /** The digest as it stands. */
  digest(): HoldDigest {
    const hex = (lane: number) => this.lanes[lane]!.toString(16).padStart(8, '0')
    return { buckets: Array.from({ length: DIGEST_BUCKETS }, (_, bucket) => hex(bucket * 2 + 1) + hex(bucket * 2)) }
  }
}

/** The buckets in which two digests differ: what one node should pull from the other. */
export function differingBuckets(left: HoldDigest, right: HoldDigest): number[] {
  return Array.from({ length: DIGEST_BUCKETS }, (_, bucket) => bucket).filter((bucket) => left.buckets[bucket] !== right.buckets[bucket])
}
