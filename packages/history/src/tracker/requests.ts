/**
 * One request's part in the per-minute counts (issue 14: served, failed without caller faults
 * and cancels, redirected off a failing provider, served by a fallback routing added, picked
 * by routing vs named by the caller, kept on a failing provider because re-routing was off).
 * Read from what the engine returns (the attempts, what served, what routing said it did), as a
 * plain outcome the gateway reads off each request's track; nothing of it is kept.
 */
import type { RecordedAttempt } from '../request-log/record.ts'
import type { DirectionCounts } from './types.ts'

/** One upstream attempt of a request: the fields of the request record's attempts the counts read. */
export type AttemptView = Pick<RecordedAttempt, 'provider' | 'model' | 'key_id' | 'failure_class'>

/** How one request went, as the gateway saw it. */
export interface RequestOutcome {
  at: number
  /** The provider the caller named (`provider/model`, a routing rule, a virtual key); null when routing picked it. */
  namedProvider: string | null
  model: string
  attempts: readonly AttemptView[]
  served: { provider: string; model: string; key_id: string } | null
  /** `excluded`: a caller fault or a cancel, which count against nothing. */
  failure: null | 'excluded' | 'upstream'
  /** What routing itself said it did (the request's plan, as the record's routing summary says it). */
  routing: { movedOff: boolean; addedFallbackServed: boolean; pinnedKeptFailed: boolean }
}

/** Classifies a request: what it adds to the counts of one direction; null for an excluded failure. */
export function countRequest(outcome: RequestOutcome) {
  if (outcome.failure === 'excluded') return null
  const named = outcome.namedProvider
  const model = outcome.model
  // The direction a request counts on: where it was served, else where it was meant to go.
  const where = outcome.served ?? outcome.attempts[0] ?? { provider: named ?? 'unknown', model }
  const add: Partial<DirectionCounts> = {}
  if (named === null) add.routingPicked = 1
  else add.callerNamed = 1
  const pinnedKeptFailed = outcome.served === null && outcome.routing.pinnedKeptFailed
  if (outcome.served !== null) {
    add.served = 1
    // Redirected (routing moved the request off the failing provider it named) and served by a fallback routing added, as
    // routing said it did: the request log's `routing.moved_off`, so the dashboard's figure and the log filter it opens
    // (`moved_off=true`, served) count the same requests.
    if (outcome.routing.movedOff) add.redirected = 1
    else if (outcome.routing.addedFallbackServed) add.fallbackServed = 1
  } else {
    add.failed = 1
    if (pinnedKeptFailed) add.keptFailing = 1
  }
  // No alternative: failed, and not one a setting could have moved (routing had nothing else to send it to).
  return { provider: where.provider, model: where.model, add, pinnedKeptFailed, noAlternative: outcome.served === null && !pinnedKeptFailed }
}
