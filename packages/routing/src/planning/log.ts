/**
 * The routing log of one request, as sentences for a person. Lines are only built when
 * someone reads them (`enabled`: the request asked with `x-bf-routing-log`, or the node logs
 * at debug); the plan itself carries the same facts as data for recorders.
 */
import { DIRECTION_REASONS, type DirectionDecision } from '../adaptive/directions.ts'
import type { AffinityOutcome } from '../adaptive/session.ts'
import type { RouteRef } from '../adaptive/types.ts'
import type { AttemptWhy } from '../retries/rotation.ts'
import type { KeyPlan, RequestPlan } from './types.ts'

/** A key the router left out of a request's picks (for the request log). */
export interface SkippedKeyFact extends RouteRef {
  keyName: string
  /** The hold's reason, or `rate_limit_window` for a key backed off until its window resets. */
  reason: string
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
  /** The check of a held key this request carries. */
  check: RouteRef | null = null
  /** The trial of a failed key this request carries (one per due time across the fleet). */
  trial: RouteRef | null = null
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

  /** Adds a provider decision as sentences: the provider chosen, those skipped, pruned and appended, then what session affinity did. */
  addDecision(decision: DirectionDecision, affinity?: AffinityOutcome): void {
    if (!this.enabled) return
    const { primary, score } = decision
    if (primary !== null) this.add(`Provider ${primary.provider} for ${primary.model}: ${DIRECTION_REASONS[decision.reason]}${score !== null ? ` (score ${score.toFixed(0)})` : ''}`)
    for (const target of decision.skipped) this.add(`Skipping provider ${target.provider} for ${target.model}: every key that serves it is failed or held`)
    for (const target of decision.pruned) this.add(`Dropping fallback ${target.provider}/${target.model}: it is failed`)
    if (decision.appended.length > 0) this.add(`Appending healthy fallbacks: ${decision.appended.map((target) => `${target.provider}/${target.model}`).join(', ')}`)
    if (affinity !== undefined) this.addSession(affinity)
  }

  /** Adds what session affinity did, if anything. */
  addSession(outcome: AffinityOutcome): void {
    if (!this.enabled || outcome === 'none') return
    this.add(outcome === 'kept' ? 'Keeping the session on its provider and key' : `Moving the session: ${outcome === 'moved_not_offered' ? 'its provider is not offered now' : 'its key is failed, held or gone'}`)
  }
}

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
  const total = plan.weights.reduce((sum, weight, other) => (plan.leftOut.some((left) => left.index === other) ? sum : sum + Math.max(0, weight)), 0)
  const share = total > 0 ? Math.max(0, plan.weights[index]!) / total : 0
  return `Key ${route.key} for ${where}: ${why === 'rotate' ? 'moving to another key, ' : ''}drawn by weight (share ${(share * 100).toFixed(0)}%)`
}
