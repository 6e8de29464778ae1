/**
 * What one upstream answer does to the holds on its key. Spec: reference/adaptive-load-balancing.txt,
 * "What holds a key", "How long a key is held", "Checking a held key again". Pure: entries come in
 * through `lookup`, and the changed ones go out, to be applied and gossiped.
 */
import type { Version } from './clock.ts'
import { isHoldReason, type AttemptFailure, type HoldReason } from '../failures/failure-class.ts'
import { holdId, settlesInFavour, type HoldEntry, type HoldTarget, type TraceOrigin } from './entry.ts'
import { baseWait, LADDER_CAP_MS, LADDER_START_MS, startingRung, topRungOf } from './ladder.ts'
import type { RouteRef } from '../adaptive/types.ts'

/** An upstream answer for a request that reached a key (a check, a pinned request, or a fresh refusal). */
export interface AttemptAnswer extends RouteRef {
  /** When the attempt was sent (epoch ms). Answers from attempts sent before a hold cannot lengthen it. */
  startedAt: number
  /** When the answer came back (epoch ms). */
  now: number
  /** Null when the key served the request. */
  failure: AttemptFailure | null
  /** The attempt was this node's check of the key: only a check's refusal renews a hold; other attempts can only release it (issue 36, item 6). */
  check: boolean
  /** The attempt's trace span, when the gateway traces: a hold this answer places carries it (`HoldEntry.origin`). */
  origin?: TraceOrigin
}

/** What happened to one hold, for the routing log, metrics, and moving the route to recovering. */
export type HoldEvent =
  /** A new hold. `askedWaitMs` is the provider's own wait when it gave one (it may be under the floor). */
  | { kind: 'placed'; entry: HoldEntry; askedWaitMs: number | null }
  /** A check answered and the hold goes on: one rung up (`refused_again`) or the same rung (`inconclusive`). */
  | { kind: 'renewed'; entry: HoldEntry; outcome: 'refused_again' | 'inconclusive' }
  /** A check (or a pinned request) released the hold; the caller moves the route to recovering. */
  | { kind: 'released'; entry: HoldEntry; cause: 'served' | 'settled' }

/** The entries an answer changed, in the order to apply them, and what each change means. */
export interface Settlement {
  changed: HoldEntry[]
  events: HoldEvent[]
}

/** What `settleAnswer` reads: the current entries, when the key was last reset, and a version source. */
export interface SettleContext {
  /** The entry (hold or tombstone) at `target`, if any. */
  lookup(target: HoldTarget): HoldEntry | undefined
  /** When the key was last edited or deleted: attempts sent before that cannot hold it. */
  resetAt: number | undefined
  /** A fresh version for a change made by this answer. */
  stamp(): Version
}

type Verdict = 'ignore' | 'release' | 'climb' | 'repeat' | 'replace' | 'replace_in_favour'

/**
 * The outcome table for one hold covering the answered route. A success, or an answer settling the
 * question in the key's favour, counts from any attempt sent after the hold began; a renewal only
 * from a check sent after its current wait began (reference: "Only a failed check moves the key
 * up the ladder"; issue 36, item 6). A different refusal on the same place is news during the wait.
 */
function judge(held: HoldEntry, answer: AttemptAnswer, refusal: HoldReason | null, sameTarget: boolean): Verdict {
  const sentDuringHold = answer.startedAt >= held.since
  const sentDuringWait = answer.startedAt >= held.waitStartedAt
  const sentAsCheck = answer.check && sentDuringWait
  if (answer.failure === null) return sentDuringHold ? 'release' : 'ignore'
  if (refusal === null) {
    // A request error means the provider took the credential and read the request: settled in the key's favour.
    if ((answer.failure.failureClass === 'caller_fault' || answer.failure.failureClass === 'context_length') && held.reason === 'credential') return sentDuringHold ? 'release' : 'ignore'
    // A cancelled check never reported back: its slot lapses after 5 minutes instead.
    if (answer.failure.failureClass === 'cancelled') return 'ignore'
    // Network errors, 5xx, timeouts, unknown and request errors say nothing about the key.
    return sentAsCheck ? 'repeat' : 'ignore'
  }
  if (sameTarget && refusal === held.reason) return sentAsCheck ? 'climb' : 'ignore'
  if (settlesInFavour(refusal, held.reason)) {
    if (!sentDuringHold) return 'ignore'
    return sameTarget ? 'replace_in_favour' : 'release'
  }
  // A refusal that stops short of the held question leaves it unanswered; the new refusal is recorded on its own.
  if (!sentDuringWait) return 'ignore'
  if (sameTarget) return 'replace'
  return sentAsCheck ? 'repeat' : 'ignore'
}

function renew(held: HoldEntry, answer: AttemptAnswer, climb: boolean, version: Version): HoldEntry {
  const failure = answer.failure
  const rung = climb ? Math.min(held.rung + 1, topRungOf(LADDER_START_MS, LADDER_CAP_MS[held.reason])) : held.rung
  // Only the same refusal may carry the provider's new wait; an inconclusive answer keeps the ladder's.
  const hint = climb && failure ? failure.waitHintMs : null
  return {
    ...held,
    message: climb && failure ? failure.message : held.message,
    waitStartedAt: answer.now,
    ...baseWait(held.reason, rung, hint),
    rung,
    checks: held.checks + 1,
    version,
  }
}

/** Applies the outcome table to every hold covering the answered route, and holds what a new refusal names. */
export function settleAnswer(answer: AttemptAnswer, context: SettleContext): Settlement {
  const failure = answer.failure
  const refusal = failure && isHoldReason(failure.failureClass) ? failure.failureClass : null
  // A refusal holds the whole key for a credential or an account-level refusal, else the model.
  const wholeKey = failure?.failureClass === 'credential' || failure?.scope === 'key'
  const target: HoldTarget | null = failure && refusal ? { provider: answer.provider, keyId: answer.keyId, model: wholeKey ? null : answer.model } : null
  const targetId = target ? holdId(target) : null
  const changed: HoldEntry[] = []
  const events: HoldEvent[] = []
  let targetSettled = false

  const covering = [
    context.lookup({ provider: answer.provider, keyId: answer.keyId, model: null }),
    context.lookup({ provider: answer.provider, keyId: answer.keyId, model: answer.model }),
  ]
  for (const held of covering) {
    if (held?.state !== 'held') continue
    const sameTarget = holdId(held) === targetId
    const verdict = judge(held, answer, refusal, sameTarget)
    if (verdict === 'ignore' || verdict === 'climb') targetSettled ||= sameTarget
    if (verdict === 'release' || verdict === 'replace_in_favour') {
      const cause = failure ? 'settled' : 'served'
      const entry: HoldEntry = { ...held, state: 'released', checks: held.checks + 1, releasedAt: answer.now, releaseCause: cause, version: context.stamp() }
      // A tombstone about to be overwritten by the new hold at the same place is reported, not stored.
      if (verdict === 'release') changed.push(entry)
      events.push({ kind: 'released', entry, cause })
    } else if (verdict === 'climb' || verdict === 'repeat') {
      const entry = renew(held, answer, verdict === 'climb', context.stamp())
      changed.push(entry)
      events.push({ kind: 'renewed', entry, outcome: verdict === 'climb' ? 'refused_again' : 'inconclusive' })
    }
  }

  if (target && refusal && failure && !targetSettled) {
    const previous = context.lookup(target)
    const stale =
      (context.resetAt !== undefined && answer.startedAt < context.resetAt) ||
      (previous?.state === 'released' && previous.releasedAt !== null && answer.startedAt < previous.releasedAt)
    if (!stale) {
      // After a favourable replacement the previous entry is the hold just released, so the rung starts at the bottom.
      const rung = startingRung(previous?.state === 'released' ? previous : undefined, refusal, answer.now)
      const entry: HoldEntry = {
        ...target,
        state: 'held',
        reason: refusal,
        message: failure.message,
        // After what the set has here now even when this node's clock is behind: merge orders holds by start.
        since: previous === undefined ? answer.now : Math.max(answer.now, previous.since + 1),
        waitStartedAt: answer.now,
        ...baseWait(refusal, rung, failure.waitHintMs),
        rung,
        checks: 0,
        releasedAt: null,
        releaseCause: null,
        version: context.stamp(),
      }
      if (answer.origin !== undefined) entry.origin = answer.origin
      changed.push(entry)
      events.push({ kind: 'placed', entry, askedWaitMs: failure.waitHintMs })
    }
  }
  return { changed, events }
}
