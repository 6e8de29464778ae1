/**
 * The active holds as `GET /api/adaptive-routing/conditions` lists them (design.md, "External
 * contract"): the provider's reason and words, when the hold began, and this node's next check.
 */
import type { HoldReason } from '../failures/failure-class.ts'
import type { HeldRoute } from './held-index.ts'

/** One active hold, in the admin API's shape. */
export interface HoldCondition {
  provider: string
  key_id: string
  /** The key's configured name, when the caller's lookup knows it. */
  key_name?: string
  /** The held model; null when the whole key is held. */
  model: string | null
  reason: HoldReason
  /** The provider's own words. */
  message: string
  /** ISO 8601 time the hold began. */
  since: string
  /** ISO 8601 time this node will let its check through. */
  next_check_at: string
  rung: number
  checks: number
}

/** Finds a key's configured name; the hold set knows only ids. */
export type KeyNameLookup = (provider: string, keyId: string) => string | undefined

/** The conditions view of `routes`, oldest hold first, ties ordered by provider, key and model. */
export function holdConditions(routes: readonly HeldRoute[], keyName?: KeyNameLookup): HoldCondition[] {
  const sorted = [...routes].sort(
    (left, right) =>
      left.entry.since - right.entry.since ||
      left.entry.provider.localeCompare(right.entry.provider) ||
      left.entry.keyId.localeCompare(right.entry.keyId) ||
      (left.entry.model ?? '').localeCompare(right.entry.model ?? ''),
  )
  return sorted.map(({ entry, dueAt }) => {
    const name = keyName?.(entry.provider, entry.keyId)
    return {
      provider: entry.provider,
      key_id: entry.keyId,
      ...(name === undefined ? {} : { key_name: name }),
      model: entry.model,
      reason: entry.reason,
      message: entry.message,
      since: new Date(entry.since).toISOString(),
      next_check_at: new Date(dueAt).toISOString(),
      rung: entry.rung,
      checks: entry.checks,
    }
  })
}
