/**
 * One request's part in the per-minute counts (issue 14: served, failed without caller faults
 * and cancels, redirected off a failing provider, served by a fallback routing added, picked
 * by routing vs named by the caller, kept on a failing provider because re-routing was off).
 * Derived from what the engine returns (the attempts and what served), as a plain outcome the
 * gateway reads off each request's track; nothing of it is kept.
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
  /** The caller's own fallbacks; read only without `routing`, to tell a fallback routing added from the caller's. */
  callerFallbacks?: readonly { provider: string; model: string }[]
  attempts: readonly AttemptView[]
  served: { provider: string; model: string; key_id: string } | null
  /** `excluded`: a caller fault or a cancel, which count against nothing. */
  failure: null | 'excluded' | 'upstream'
  /** `reroute_failed_directions` when the request arrived. */
  rerouteEnabled: boolean
  /** What routing itself said it did (the request's plan, as the record's routing summary says it), when known: it wins over what is derived here. */
  routing?: { movedOff: boolean; addedFallbackServed: boolean; pinnedKeptFailed: boolean }
}

/** What the request adds to the counts of one direction. */
export interface RequestCounting {
  provider: string
  model: string
  add: Partial<DirectionCounts>
  /** Pinned to a failing provider, kept there because re-routing was off, and failed. */
  pinnedKeptFailed: boolean
  /** Failed, and not one a setting could have moved (routing had nothing else to send it to). */
  noAlternative: boolean
}

/**
 * Classifies a request. `failing(model)` gives the providers this node saw failed for that
 * model when the request arrived. Returns null for an excluded failure.
 */
export function countRequest(outcome: RequestOutcome, failing: (model: string) => ReadonlySet<string> | undefined): RequestCounting | null {
  if (outcome.failure === 'excluded') return null
  const first = outcome.attempts[0]
  const named = outcome.namedProvider
  const model = outcome.model
  const failingNow = failing(model)
  // The direction a request counts on: where it was served, else where it was meant to go.
  const where = outcome.served ?? first ?? { provider: named ?? 'unknown', model }
  const add: Partial<DirectionCounts> = {}
  if (named === null) add.routingPicked = 1
  else add.callerNamed = 1
  let pinnedKeptFailed = false
  if (outcome.served !== null) {
    add.served = 1
    const served = outcome.served
    // Redirected: routing moved the request off the failing provider it named. When routing said what
    // it did, that alone decides: it is the request log's `routing.moved_off`, so the dashboard's
    // figure and the log filter it opens (`moved_off=true`, served) count the same requests.
    const routing = outcome.routing
    const redirected =
      routing !== undefined ? routing.movedOff : named !== null && failingNow !== undefined && served.provider !== named && failingNow.has(named) && !outcome.attempts.some((attempt) => attempt.provider === named)
    if (redirected) add.redirected = 1
    // A fallback routing added served it: not the first target, and not one the caller listed.
    else if (routing !== undefined ? routing.addedFallbackServed : first !== undefined && (first.provider !== served.provider || first.model !== served.model) && !isCallers(outcome, served.provider, served.model)) add.fallbackServed = 1
  } else {
    add.failed = 1
    if (outcome.routing !== undefined ? outcome.routing.pinnedKeptFailed : named !== null && !outcome.rerouteEnabled && failingNow?.has(named) === true) {
      add.keptFailing = 1
      pinnedKeptFailed = true
    }
  }
  return { provider: where.provider, model: where.model, add, pinnedKeptFailed, noAlternative: outcome.served === null && !pinnedKeptFailed }
}

/**
 * Whether a direction is one the caller asked for: the provider it named, or one of its own
 * fallbacks. (A function of its own, not a closure per request: the loader names every
 * closure it creates, which costs a property definition each time.)
 */
function isCallers(outcome: RequestOutcome, provider: string, model: string): boolean {
  if (provider === outcome.namedProvider && model === outcome.model) return true
  const fallbacks = outcome.callerFallbacks
  if (fallbacks === undefined) return false
  for (const fallback of fallbacks) if (fallback.provider === provider && fallback.model === model) return true
  return false
}
