/**
 * The operator's release: which holds a `POST /api/adaptive-routing/conditions/clear` body names.
 * Spec: reference/adaptive-load-balancing.txt, "Releasing held keys" (the field table).
 */
import type { HoldEntry } from './entry.ts'

/** The body of a clear request. Every field is optional; none at all releases everything. */
export interface ClearFilter {
  provider?: string | undefined
  keyId?: string | undefined
  model?: string | undefined
}

/** A clear request whose fields do not combine; the gateway answers 400 with the message. */
export class HoldClearError extends Error {
  override name = 'HoldClearError'
  readonly code = 'invalid_clear_request' as const

  constructor(
    /** The request field at fault, as the API spells it. */
    readonly field: 'provider' | 'key_id' | 'model',
    message: string,
  ) {
    super(message)
  }
}

/** Checks the field rules and returns the filter; throws `HoldClearError` for a combination the API refuses. */
export function validateClearFilter(filter: ClearFilter): ClearFilter {
  for (const [field, value] of [['provider', filter.provider], ['key_id', filter.keyId], ['model', filter.model]] as const) {
    if (value !== undefined && (typeof value !== 'string' || value.trim() === '')) {
      throw new HoldClearError(field, `${field} must be a non-empty string when given`)
    }
  }
  if (filter.model !== undefined && (filter.provider === undefined || filter.keyId === undefined)) {
    throw new HoldClearError('model', 'model requires provider and key_id: a model is released one key at a time')
  }
  if (filter.keyId !== undefined && filter.provider === undefined) {
    throw new HoldClearError('key_id', 'key_id requires provider: key ids are only unique within a provider')
  }
  return filter
}

/** True when a validated `filter` names `entry` (naming a model reaches only that model's hold, never a whole-key one). */
export function clearMatches(filter: ClearFilter, entry: HoldEntry): boolean {
  return (['provider', 'keyId', 'model'] as const).every((field) => filter[field] === undefined || entry[field] === filter[field])
}
