/**
 * The routing log of one request, as sentences for a person. Lines are only built when
 * someone reads them (`enabled`: the request asked with `x-bf-routing-log`, or the node logs
 * at debug); the plan itself carries the same facts as data for recorders.
 */
import type { DirectionDecision } from '../adaptive/directions.ts'
import type { RoutingLogEntry } from '../adaptive/routing-log.ts'
import type { AffinityOutcome } from '../adaptive/session.ts'
import type { KeyPlan, RequestPlan } from './types.ts'

/** A key the router left out of a request's picks (for the request log). */
export interface SkippedKeyFact {
  provider: string
  model: string
  keyId: string
  keyName: string
  /** The hold's reason, or `rate_limit_window` for a key backed off until its window resets. */
  reason: string
}

/** The check of a held key a request carries; `keyId` null when every key was held and the one sent counts. */
export interface CheckFact {
  provider: string
  model: string
  keyId: string | null
}

/**
 * Collects the lines of one request; `enabled` false makes every call free. With `recording` (the
 * request log is on) the lines built anyway are kept, and the router leaves its decision's facts here.
 */
export class RoutingLog {
  readonly lines: string[] = []
  /** The provider decision of the request. */
  decision: DirectionDecision | null = null
  /** What session affinity did, when the request has a session. */
  session: AffinityOutcome | null = null
  check: CheckFact | null = null
  /** The trial of a failed key this request carries (one per due time across the fleet). */
  trial: { provider: string; model: string; keyId: string } | null = null
  skipped: SkippedKeyFact[] | null = null
  /** The request's plan (targets in order, primary, picked by, moved off, check, session), once planned. */
  plan: RequestPlan | null = null
  constructor(
    readonly enabled: boolean,
    readonly recording = false,
  ) {}

  /** An empty log that records nothing. */
  static readonly off: RoutingLog = new RoutingLog(false)

  add(line: string): void {
    if (this.enabled || this.recording) this.lines.push(`[loadbalancing] ${line}`)
  }

  /** Adds the balancer's structured entries as sentences. */
  addEntries(entries: readonly RoutingLogEntry[]): void {
    if (!this.enabled) return
    for (const entry of entries) this.add(describeEntry(entry))
  }
}

const DIRECTION_REASONS: Record<string, string> = {
  scored: 'the best-scored provider for the model',
  scored_lower: 'a healthy provider with a smaller share, drawn so it keeps being measured',
  all_failed: 'every provider serving the model is failed; sending to the first anyway',
  static: 'provider selection is off: the first configured provider serving the model',
  pinned: 'the provider the request named',
  pinned_failed_kept: 'the provider the request named is failed, and re-routing is off: kept on it (a healthy provider serves the model)',
  pinned_rerouted: 'the provider the request named is failed: re-routed to the best healthy provider',
  pinned_no_alternative: 'the provider the request named is failed, and no healthy provider serves the model: kept on it',
  no_provider: 'no configured provider serves the model',
}

/** One structured entry as a sentence. */
export function describeEntry(entry: RoutingLogEntry): string {
  switch (entry.kind) {
    case 'provider_chosen':
      return `Provider ${entry.provider} for ${entry.model}: ${DIRECTION_REASONS[entry.reason] ?? entry.reason}${entry.score !== null ? ` (score ${entry.score.toFixed(0)})` : ''}`
    case 'provider_skipped':
      return `Skipping provider ${entry.provider} for ${entry.model}: every key that serves it is failed or held`
    case 'fallback_pruned':
      return `Dropping fallback ${entry.provider}/${entry.model}: it is failed`
    case 'fallbacks_appended':
      return `Appending healthy fallbacks: ${entry.targets.map((target) => `${target.provider}/${target.model}`).join(', ')}`
    case 'session':
      return entry.outcome === 'kept' ? 'Keeping the session on its provider and key' : `Moving the session: ${entry.outcome === 'moved_not_offered' ? 'its provider is not offered now' : 'its key is failed, held or gone'}`
  }
}

/** Why an attempt uses the key it uses, as the routing log says it. */
export type AttemptWhy = 'first' | 'retry' | 'rotate'

/**
 * The line for the key an attempt actually uses: the check, the session's key, or a draw by
 * weight with its share among the keys this request may use.
 */
export function keyChosenLine(route: { provider: string; model: string; key: string }, plan: KeyPlan, index: number, why: AttemptWhy, direct: boolean): string {
  const where = `${route.provider}/${route.model}`
  if (direct) return `Key ${route.key} for ${where}: the caller's own key`
  if (why === 'retry') return `Retrying key ${route.key} for ${where}`
  if (index === plan.check) return plan.everyKeyHeld ? `Key ${route.key} for ${where}: every key is held, so this request tries it once` : `Key ${route.key} for ${where}: this request is its check`
  if (why === 'first' && index === plan.first) return `Key ${route.key} for ${where}: the session's key`
  let total = 0
  for (let other = 0; other < plan.weights.length; other++) {
    if (plan.leftOut.some((left) => left.index === other)) continue
    total += Math.max(0, plan.weights[other]!)
  }
  const share = total > 0 ? Math.max(0, plan.weights[index]!) / total : 0
  return `Key ${route.key} for ${where}: ${why === 'rotate' ? 'moving to another key, ' : ''}drawn by weight (share ${(share * 100).toFixed(0)}%)`
}
