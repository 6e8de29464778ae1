/**
 * The route of one request (issue 35, item 2): what the gateway gives routing of a request, the
 * attempts routing plans for it, and what routing makes of each outcome (router.ts makes it).
 */
import { routingFailure, type AttemptFailure, type HoldReason } from '../failures/failure-class.ts'
import type { HoldEntry, TraceOrigin } from '../holds/entry.ts'
import type { RetryPolicy } from '../retries/backoff.ts'
import type { KeyRotation, RotationStep, RotationStopReason } from '../retries/rotation.ts'
import type { TrialEntry } from '../trials/entry.ts'
import type { BalancerKey, LoadBalancerSettings, TokenUsage } from '../adaptive/types.ts'
import type { RateLimitBackoff } from './backoffs.ts'
import { attemptDeadlines, endsChain, mayContinue, MAX_CONTINUATIONS, retryAfterMs, type AttemptDeadlines, type DeadlineSettings } from './chain.ts'
import { keyRotationFor, NO_LEFT_OUT, planKeys } from './key-plan.ts'
import { keyChosenLine, type RoutingLog } from './log.ts'
import type { Router } from './router.ts'
import type { KeyLeftOut, KeyPlan, PlannedTarget, PlannerComponents, RequestPlan } from './types.ts'

/** What the router reads besides the planner's state. */
export interface RouterComponents extends PlannerComponents {
  settings(): LoadBalancerSettings
  now(): number
  random(): number
  /** A key's configured name, for log lines (its id when unknown). */
  keyName(provider: string, keyId: string): string
}

/** A planned target as the node runs it: what routing needs to plan its attempts. */
export interface RouteTarget<K extends BalancerKey = BalancerKey> {
  readonly planned: PlannedTarget
  /** The keys attempts may use: the provider's keys for the model, or the caller's own key alone (`planned.direct`). */
  keys(): readonly K[]
  readonly policy: RetryPolicy
  /** The provider's deadlines (`network_config`). */
  readonly deadlines: DeadlineSettings & { requestMs: number }
  /** The target continues a stream from an assistant prefill (a capability of the provider type). */
  readonly continues: boolean
}

/** Whether a target may take this request: the gateway key's providers, and what the provider serves. */
export type TargetFit = 'fits' | 'not_allowed' | 'not_served'

/** What a request brings to its route besides its plan. */
export interface RouteRequest<T> {
  sessionId: string | null
  /** The session's own idle limit (`x-bf-session-ttl`). */
  sessionTtlMs?: number
  log: RoutingLog
  /** Deadlines the request set by header. */
  deadlines?: DeadlineSettings
  /** The request streams: its response headers are bounded by the first-token deadline too. */
  streams: boolean
  /** Which targets may take it. */
  filter: TargetFilter<T>
}

/** Says which targets may take a request (the gateway reads its key's providers and each adapter's surfaces). */
export interface TargetFilter<T> {
  fit(target: T): TargetFit
}

/** One attempt to send. */
export interface AttemptStep<T, K> {
  kind: 'attempt'
  target: T
  /** Index of `target` in the request's targets. */
  index: number
  key: K
  /** Wait this long before sending (a retry's backoff, a short Retry-After). */
  delayMs: number
  /** Deadlines: response headers (or the whole JSON answer), first content event (null: none), silence inside a stream. */
  headersMs: number
  firstTokenMs: number | null
  idleMs: number
  /** The keys the target's key plan left out (held, backed off; shared: read only), with the spans that placed their holds; empty after its first attempt. */
  skipped: readonly KeyLeftOut[]
  /** A stream this attempt serves could be continued by this target or a later one, should it break. */
  continuable: boolean
  /** The attempt is its key's check on this node: only a check's refusal renews a hold (issue 36, item 6). */
  check: boolean
  /** Trial rounds routing changed while planning it, for the fleet. */
  trials: readonly TrialEntry[]
}

/** How a target ended that did not serve. */
export interface TargetFailure<T, K> {
  reason: RotationStopReason
  last: AttemptFailure | null
  target: T
  key: K | null
  /** Keys left waiting (rate limited, backed off) rather than dead: the earliest is due this many ms from now. */
  retryAfterMs: number | null
}

/** How the request ended without an answer. */
export type RouteEnd<T, K> =
  /** The primary's failure (or the first target's, when the primary was never tried). */
  | { kind: 'end'; outcome: 'failed'; failure: TargetFailure<T, K> }
  /** No target tried (the surface is served by none, no provider the gateway key may use has the model, or none has it at all), or none continued a broken stream. */
  | { kind: 'end'; outcome: 'not_served' | 'not_allowed' | 'no_target' | 'not_continued' }

/** How an attempt went. */
export type AttemptReport =
  /** Sent and answered: served (`failure` null: the JSON answer, or the whole stream) or failed. */
  | {
      sent: true
      startedAt: number
      failure: AttemptFailure | null
      /** The caller got this attempt's answer (a JSON answer, or a stream past its first-chunk gate). */
      served: boolean
      /** A served answer's reading of the key's rate-limit window. */
      rateLimit?: { untilMs: number; window: string; remaining: number } | null
      usage?: TokenUsage | null
      /** The attempt's trace span, when the gateway traces: a hold its refusal places carries it to the fleet. */
      origin?: TraceOrigin
    }
  /** Never sent: the body cannot be said in the provider's format, the send threw, or the caller left during the delay. */
  | { sent: false; cancelled: boolean }

/** What the gateway carries out after an attempt. */
export interface AttemptEffects {
  /** The failure as routing acts on it (a 5xx that reports no rate limit holds nothing; a 402 is the whole key). */
  failure: AttemptFailure | null
  /** Holds the answer placed, renewed or released. */
  holds: HoldNews | null
  /** A key whose rate-limit window ran out: backed off here, and for the region's nodes. */
  backoff: RateLimitBackoff | null
  /** Trial rounds changed, for the fleet. */
  trials: readonly TrialEntry[]
}

/** One hold change, as the node log and metrics say it. */
export type HoldChange =
  | { kind: 'placed'; provider: string; key: string; model: string | null; reason: HoldReason; line: string }
  | { kind: 'renewed'; provider: string; key: string; model: string | null; reason: HoldReason; outcome: 'refused_again' | 'inconclusive'; line: string }
  | { kind: 'released'; provider: string; key: string; model: string | null; cause: 'served' | 'settled'; line: string }

/** What a settlement did: each change in words, and the entries the fleet must hear of. */
export interface HoldNews {
  changes: HoldChange[]
  /** Entries changed, for gossip (empty when nothing changed). */
  changed: readonly HoldEntry[]
}

export const NO_TRIALS: readonly TrialEntry[] = Object.freeze([])
const NO_DEADLINES: AttemptDeadlines = Object.freeze({ requestMs: 0, firstTokenMs: null, idleMs: 0 })
const DIRECT_KEY_PLAN: KeyPlan = Object.freeze({ weights: Object.freeze([1]), leftOut: Object.freeze([]), first: 0, check: -1, checkDue: false, everyKeyHeld: false })

/** The router's node-level parts a request's route uses. */
export type RouteShared = Pick<Router, 'settle' | 'backOff' | 'trialChanges'>

/** The route of one request: a cursor over its targets, and the key rotation of the current one (a class: made per request). */
export class RequestRoute<T extends RouteTarget<K>, K extends BalancerKey> {
  private index = -1
  private primaryFailure: TargetFailure<T, K> | null = null
  private firstFailure: TargetFailure<T, K> | null = null
  private notServed = 0
  private notAllowed = 0
  /** The current target's rotation; null between targets. */
  private rotation: KeyRotation | null = null
  private keyPlan: KeyPlan = DIRECT_KEY_PLAN
  private keys: readonly K[] = []
  private step: RotationStep | null = null
  private last: AttemptFailure | null = null
  private lastKey: K | null = null
  /** The current target's deadlines, and its response headers' (bounded by the first-token deadline too in a stream). */
  private deadlines = NO_DEADLINES
  private headersMs = 0
  /** Continuing a broken stream: only targets that continue, and only `cancelled` ends the walk. */
  private continuation = 0
  private sentChars = 0

  constructor(
    private readonly components: RouterComponents,
    private readonly shared: RouteShared,
    readonly plan: RequestPlan,
    private readonly targets: readonly T[],
    private readonly request: RouteRequest<T>,
  ) {}

  /** The next attempt, or how the request ended. */
  next(): AttemptStep<T, K> | RouteEnd<T, K> {
    const { components, targets } = this
    for (;;) {
      if (this.rotation === null && !this.advance()) return this.end()
      const current = this.step!
      const target = targets[this.index]!
      if (current.kind === 'attempt') {
        const key = this.keys[current.keyIndex]!
        this.lastKey = key
        const log = this.request.log
        if (log.enabled) log.add(keyChosenLine({ provider: target.planned.provider, model: target.planned.model, key: key.name }, this.keyPlan, current.keyIndex, current.why, target.planned.direct))
        if (!target.planned.direct) components.balancer.attemptStarted({ provider: target.planned.provider, model: target.planned.model, keyId: key.id }, components.now())
        const first = current.why === 'first'
        return {
          kind: 'attempt',
          target,
          index: this.index,
          key,
          delayMs: current.delayMs,
          headersMs: this.headersMs,
          firstTokenMs: this.deadlines.firstTokenMs,
          idleMs: this.deadlines.idleMs,
          skipped: first ? this.keyPlan.leftOut : NO_LEFT_OUT,
          continuable: targets.findLastIndex((candidate) => candidate.continues) >= this.index,
          check: current.keyIndex === this.keyPlan.check && this.keyPlan.checkDue,
          trials: first ? this.shared.trialChanges() : NO_TRIALS,
        }
      }
      // The target is done without serving.
      const failure: TargetFailure<T, K> = { reason: current.reason, last: this.last, target, key: this.lastKey, retryAfterMs: this.rotation!.waiting ? retryAfterMs(this.keyPlan, this.last, components.now()) : null }
      this.rotation = null
      if (this.continuation > 0) {
        if (current.reason === 'cancelled') return this.end()
        continue
      }
      this.firstFailure ??= failure
      const primary = this.index === this.plan.primary
      if (primary) this.primaryFailure = failure
      if (endsChain(current.reason, primary)) return this.end()
    }
  }

  /** How `attempt` went; what routing made of it. */
  report(attempt: AttemptStep<T, K>, report: AttemptReport): AttemptEffects {
    const { components, shared } = this
    const target = attempt.target
    const route = { provider: target.planned.provider, model: target.planned.model, keyId: attempt.key.id }
    if (!report.sent) {
      if (!target.planned.direct) components.balancer.attemptAbandoned(route, components.now())
      if (report.cancelled && this.rotation !== null && this.index === attempt.index) this.step = { kind: 'stop', reason: 'cancelled' }
      return { failure: null, holds: null, backoff: null, trials: target.planned.direct ? NO_TRIALS : shared.trialChanges() }
    }
    const at = components.now()
    const failure = report.failure === null ? null : routingFailure(report.failure)
    let backoff: RateLimitBackoff | null = null
    let news: HoldNews | null = null
    let trials = NO_TRIALS
    if (!target.planned.direct) {
      const log = this.request.log
      const rateLimit = report.rateLimit
      if (failure === null && rateLimit != null && rateLimit.untilMs > at && !components.backoffs.isBackedOff(route.provider, route.keyId, route.model, at)) {
        backoff = { provider: route.provider, keyId: route.keyId, model: route.model, untilMs: rateLimit.untilMs }
        shared.backOff(backoff)
        log.add(`Backing key ${attempt.key.name} off ${route.provider}/${route.model} until its ${rateLimit.window} window resets in ${Math.ceil((rateLimit.untilMs - at) / 1000)}s (${rateLimit.remaining} left)`)
      }
      components.balancer.attemptFinished({
        provider: route.provider,
        model: route.model,
        keyId: route.keyId,
        failureClass: failure === null ? null : failure.failureClass,
        latencyMs: at - report.startedAt,
        promptTokens: report.usage?.promptTokens,
        completionTokens: report.usage?.completionTokens,
        now: at,
      })
      trials = shared.trialChanges()
      const settlement = components.holds.recordAnswer({ provider: route.provider, keyId: route.keyId, model: route.model, startedAt: report.startedAt, now: at, failure, check: attempt.check, origin: report.origin })
      if (settlement.events.length > 0 || settlement.changed.length > 0) news = shared.settle(settlement, log, route.model)
      const sessionId = this.request.sessionId
      // A session's request lent to a check, a trial or a recovering key's probe leaves the session where its cache is (issue 36, item 8).
      const lent = this.index === attempt.index && this.keyPlan.check >= 0 && this.keys[this.keyPlan.check] === attempt.key
      if ((report.served || failure === null) && sessionId !== null && !lent) components.sessions.remember(sessionId, route.model, { provider: route.provider, keyId: route.keyId }, at, this.request.sessionTtlMs)
    }
    // The request moves on only from an attempt the caller did not get (a stream past its gate has left the chain).
    if (!report.served && this.rotation !== null && this.index === attempt.index) {
      this.last = failure
      this.step = failure === null ? { kind: 'stop', reason: 'retries_exhausted' } : this.rotation.next(failure)
    }
    return { failure, holds: news, backoff, trials }
  }

  /** A stream `attempt` served broke after content went out: true when it may be continued (`next()` then walks the targets that continue it). */
  resume(attempt: AttemptStep<T, K>, continuable: boolean, sentChars: number): boolean {
    const may = mayContinue(this.continuation + 1, continuable)
    if (may !== 'yes') {
      const log = this.request.log
      if (log.enabled) log.add(may === 'continued_enough' ? `Not continuing the broken stream: it was continued ${MAX_CONTINUATIONS} times already` : 'Not continuing the broken stream: it sent a tool call or thinking, which a prefill cannot carry')
      return false
    }
    this.continuation++
    this.sentChars = sentChars
    // From the target that broke: another of its keys, or a later target, continues it.
    this.index = attempt.index - 1
    this.rotation = null
    return true
  }

  /** Moves to the next target that may take the request; false when none is left. */
  private advance(): boolean {
    const { components, targets, request } = this
    for (this.index++; this.index < targets.length; this.index++) {
      const target = targets[this.index]!
      const fit = request.filter.fit(target)
      if (fit !== 'fits') {
        if (fit === 'not_served') this.notServed++
        else this.notAllowed++
        continue
      }
      if (this.continuation > 0) {
        if (!target.continues) continue
        if (request.log.enabled) request.log.add(`Continuing the broken stream on ${target.planned.provider}/${target.planned.model} from the ${this.sentChars} characters sent`)
      }
      const keys = target.keys()
      this.keys = keys
      this.keyPlan = target.planned.direct ? DIRECT_KEY_PLAN : planKeys(components, target.planned, keys, { settings: components.settings(), now: components.now(), log: request.log })
      const fallbackAfter = this.index < targets.length - 1
      const rotation = keyRotationFor(this.keyPlan, target.policy, components.random, fallbackAfter)
      this.rotation = rotation
      // Something else could take the request: the default first-token deadline applies (chain.ts).
      const deadlines = attemptDeadlines(target.deadlines, request.deadlines, fallbackAfter || keys.length > 1)
      this.deadlines = deadlines
      this.headersMs = request.streams && deadlines.firstTokenMs !== null ? Math.min(deadlines.requestMs, deadlines.firstTokenMs) : deadlines.requestMs
      this.step = rotation.first()
      this.last = null
      this.lastKey = null
      return true
    }
    return false
  }

  /** The end of the request: the primary's failure, else the first, else why no target was tried. */
  private end(): RouteEnd<T, K> {
    if (this.continuation > 0) return { kind: 'end', outcome: 'not_continued' }
    const failure = this.primaryFailure ?? this.firstFailure
    if (failure !== null) return { kind: 'end', outcome: 'failed', failure }
    if (this.notServed > 0) return { kind: 'end', outcome: 'not_served' }
    if (this.notAllowed > 0) return { kind: 'end', outcome: 'not_allowed' }
    return { kind: 'end', outcome: 'no_target' }
  }
}
