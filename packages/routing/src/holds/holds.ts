/**
 * One node's held keys: the replicated hold set, this node's clock, due times and check slots.
 * Spec: reference/adaptive-load-balancing.txt, "Held Keys"; design.md, "Cluster model".
 */
import { createClock } from './clock.ts'
import { clearedName, type HoldEntry, type HoldTarget, type ReleaseCause } from './entry.ts'
import { clearMatches, validateClearFilter, type ClearFilter } from './clear.ts'
import { holdConditions, type HoldCondition, type KeyNameLookup } from './conditions.ts'
import type { HoldDigest } from './digest.ts'
import { HeldIndex, type HeldRoute } from './held-index.ts'
import { HoldSet, TOMBSTONE_LIFETIME_MS } from './hold-set.ts'
import { settleAnswer, type AttemptAnswer, type Settlement } from './settle.ts'

/** What `createHolds` needs: who this node is, and its random source for the ±10 % jitter. */
export interface HoldsInit {
  nodeId: string
  /** Uniform in [0, 1); drawn once per hold version for this node's due time. */
  random: () => number
}

/** One node's held keys. */
export type Holds = ReturnType<typeof createHolds>

/** The settlement of an answer that changes nothing (shared: never mutated). */
const NOTHING: Settlement = Object.freeze({ changed: [], events: [] }) as unknown as Settlement

/** Creates the held keys of node `init.nodeId`, empty; restore with `merge(snapshot.entries, now)`. */
export function createHolds(init: HoldsInit) {
  const clock = createClock(init.nodeId)
  const set = new HoldSet()
  const index = new HeldIndex(init.random)
  /** When each key (by [provider, keyId]) or provider (by [provider]) was last edited or deleted. */
  const resets = new Map<string, number>()

  function store(entries: readonly HoldEntry[]): void {
    for (const entry of entries) if (set.apply(entry)) index.update(entry)
  }

  /** Releases every entry matching `matches` with `cause`: active holds, and tombstones whose rung could still resume. */
  function releaseWhere(matches: (entry: HoldEntry) => boolean, cause: ReleaseCause, now: number): { released: HoldEntry[]; changed: HoldEntry[] } {
    const released: HoldEntry[] = []
    const changed: HoldEntry[] = []
    for (const entry of set.entries()) {
      if (!matches(entry) || entry.releaseCause === cause) continue
      const resumable = entry.releaseCause === 'served' || entry.releaseCause === 'settled'
      if (entry.state === 'released' && !resumable) continue
      if (entry.state === 'held') released.push(entry)
      changed.push({ ...entry, state: 'released', releasedAt: now, releaseCause: cause, version: clock.tick(now) })
    }
    store(changed)
    return { released, changed }
  }

  /** A key (or, without `keyId`, a provider) edited or deleted: its holds released, and answers to attempts sent before now ignored. */
  function reset(cause: ReleaseCause, now: number, provider: string, keyId?: string): HoldEntry[] {
    resets.set(JSON.stringify(keyId === undefined ? [provider] : [provider, keyId]), now)
    return releaseWhere((entry) => entry.provider === provider && (keyId === undefined || entry.keyId === keyId), cause, now).changed
  }

  function resetAt(provider: string, keyId: string): number | undefined {
    if (resets.size === 0) return undefined
    const times = [resets.get(JSON.stringify([provider, keyId])), resets.get(JSON.stringify([provider]))].filter((at) => at !== undefined)
    return times.length === 0 ? undefined : Math.max(...times)
  }

  return {
    /** The node's hybrid logical clock, which stamps every local change. */
    clock,
    /** Applies an upstream answer (success or failure) to the holds on its key; gossip `changed`. */
    recordAnswer(answer: AttemptAnswer): Settlement {
      // The hot path: a served request on a key with no hold changes nothing.
      if (answer.failure === null && !index.isHeld(answer.provider, answer.keyId, answer.model)) return NOTHING
      const settlement = settleAnswer(answer, {
        lookup: (target: HoldTarget) => set.get(target),
        resetAt: resetAt(answer.provider, answer.keyId),
        stamp: () => clock.tick(answer.now),
      })
      store(settlement.changed)
      return settlement
    },
    /** True when `keyId` must be skipped for `model` (a whole-key hold covers every model). */
    isHeld: (provider: string, keyId: string, model: string): boolean => index.isHeld(provider, keyId, model),
    /** Lets the request through as this node's one check of a due key; true when it is the check. */
    claimCheck: (provider: string, keyId: string, model: string, now: number): boolean => index.claim(provider, keyId, model, now),
    /** Held keys of `provider` this node may check for `model` now. */
    dueKeys: (provider: string, model: string, now: number): string[] => index.dueKeys(provider, model, now),
    /** The holds covering a route, with this node's due times (for log lines and the dashboard). */
    holdsOn: (provider: string, keyId: string, model: string): readonly HeldRoute[] => index.covering(provider, keyId, model),
    /** Operator release: the API's answer (each hold once: a whole-key hold by its key id, a model hold by its route) and the tombstones to gossip; throws `HoldClearError` for a body the API refuses. */
    clear(filter: ClearFilter, now: number) {
      const valid = validateClearFilter(filter)
      const { released, changed } = releaseWhere((entry) => clearMatches(valid, entry), 'operator', now)
      const cleared = released.map(clearedName)
      return { cleared, count: cleared.length, changed }
    },
    /** A key edit or rotation: releases every hold of the key and resets its ladder. */
    keyEdited: (provider: string, keyId: string, now: number): HoldEntry[] => reset('key_edit', now, provider, keyId),
    /** A key delete: removes its holds, with no rung to resume. */
    keyDeleted: (provider: string, keyId: string, now: number): HoldEntry[] => reset('deleted', now, provider, keyId),
    /** A provider delete: removes the holds of all its keys. */
    providerDeleted: (provider: string, now: number): HoldEntry[] => reset('deleted', now, provider),
    /** Takes in entries from a peer or a snapshot; returns the ones that changed this node's set. */
    merge(entries: readonly HoldEntry[], now: number): HoldEntry[] {
      for (const entry of entries) clock.observe(entry.version, now)
      const changed = set.merge(entries)
      for (const entry of changed) index.update(entry)
      return changed
    },
    /** Every entry, tombstones included. */
    entries: (): HoldEntry[] => set.entries(),
    /** The entries in the given digest buckets. */
    entriesInBuckets: (buckets: readonly number[]): HoldEntry[] => set.entriesInBuckets(buckets),
    /** Anti-entropy fingerprint; call `collect` first so expired tombstones do not differ between nodes. */
    digest: (): HoldDigest => set.digest(),
    /** Drops expired tombstones; returns them. */
    collect(now: number): HoldEntry[] {
      for (const [key, at] of resets) if (now - at >= TOMBSTONE_LIFETIME_MS) resets.delete(key)
      return set.collect(now)
    },
    /** The active holds for `GET /api/adaptive-routing/conditions`. */
    conditions: (keyName?: KeyNameLookup): HoldCondition[] => holdConditions(index.routes(), keyName),
  }
}
