/**
 * Planning the keys of one target, and the rotation that draws them: the key-selection engine
 * (bench/data-plane/selection.ts times `planKeys` + `keyRotationFor(...).first()`). Held and
 * backed-off keys are left out; a due key is claimed as this request's check.
 * Spec: reference/adaptive-load-balancing.txt ("Held Keys", "When every key is held").
 */
import { NO_INDEXES, type RotationWeights } from '../adaptive/tables.ts'
import { RECOVERY_PROBE_IDLE_MS } from '../adaptive/tuning.ts'
import type { BalancerKey } from '../adaptive/types.ts'
import { killsKeyForRequest } from '../failures/failure-class.ts'
import { checkLine, everyKeyHeldLine, skipLine } from '../holds/log-lines.ts'
import { probeLine, trialLine } from '../trials/log-lines.ts'
import type { RetryPolicy } from '../retries/backoff.ts'
import { KeyRotation } from '../retries/rotation.ts'
import type { TraceOrigin } from '../holds/entry.ts'
import type { RoutingLog } from './log.ts'
import type { KeyLeftOut, KeyPlan, KeyPlanInput, PlannedTarget, PlannerComponents } from './types.ts'

export const NO_LEFT_OUT: readonly KeyLeftOut[] = Object.freeze([])

/** Per selection table: the key list last found in the table's order. */
const alignedKeys = new WeakMap<RotationWeights, readonly BalancerKey[]>()
/** Per selection table: the plan of a plain draw, shared (read only) until `validUntil` or the table's rebuild. */
const settledPlans = new WeakMap<RotationWeights, { plan: KeyPlan; validUntil: number }>()

/** How long a session with warm history waits past a key's due time before it takes the check itself. */
export const SESSION_CHECK_GRACE_MS = 5_000

/**
 * Plans the keys of one target: the rotation weights, the keys left out, and the check this
 * request claims (a session keeping its key claims one only SESSION_CHECK_GRACE_MS past due). With
 * every key held or backed off and none due, one attempt goes to the key due soonest anyway.
 */
export function planKeys(components: PlannerComponents, target: PlannedTarget, keys: readonly BalancerKey[], input: KeyPlanInput): KeyPlan {
  const { balancer } = components
  const { provider, model } = target
  const { now, log } = input
  const table = balancer.rotationWeights(provider, model, input.settings.route_selection_enabled)
  const weights = alignWeights(keys, table)
  const aligned = table !== undefined && weights === table.weights
  if (aligned && table.failedIndexes.length > 0) {
    // A key failed here whose round is due: this request may be its trial (issue 35, item 8), while
    // other keys serve (on a provider failed on every key, any key served recovers it anyway).
    if (!target.firstIsCheck && weights.some((weight) => weight > 0)) {
      for (const index of table.failedIndexes) {
        const key = keys[index]!
        if (!balancer.takeTrial({ provider, model, keyId: key.id }, now)) continue
        log.trial ??= { provider, model, keyId: key.id }
        if (log.enabled || log.recording) log.add(trialLine({ provider, model, key: key.name, wholeProvider: false }))
        target = { ...target, firstKeyId: key.id, firstIsCheck: true, sessionKeyId: target.firstKeyId }
        break
      }
    }
    // A trial (taken here or by request-plan.ts): one attempt on that key, none on other failed keys.
    const trialIndex = target.firstIsCheck && target.firstKeyId !== undefined ? indexOfKey(keys, target.firstKeyId) : -1
    if (trialIndex >= 0 && table.failedIndexes.includes(trialIndex)) return leaveOutFailed(planWithKeys(components, target, keys, input, table, weights), table.failedIndexes, keys)
  }
  if (aligned && table.recoveringIndexes.length > 0 && !target.firstIsCheck) target = probeRecovering(components, target, keys, table.recoveringIndexes, now, log)
  return planWithKeys(components, target, keys, input, table, weights)
}

/**
 * A recovering key this node sent nothing for RECOVERY_PROBE_IDLE_MS gets this request's first
 * attempt (a session's is lent), unless a held key's check is due (issue 36, item 8).
 */
function probeRecovering(components: PlannerComponents, target: PlannedTarget, keys: readonly BalancerKey[], recovering: readonly number[], now: number, log: RoutingLog): PlannedTarget {
  const { provider, model } = target
  for (const index of recovering) {
    const key = keys[index]!
    // The session's own key goes first anyway.
    if (key.id === target.firstKeyId) continue
    const route = { provider, model, keyId: key.id }
    if (!components.balancer.takeProbe(route, now)) continue
    // A held key's due check goes first: the probe waits for the next request.
    if (components.holds.dueKeys(provider, model, now).length > 0) return target
    if (log.enabled || log.recording) log.add(probeLine({ provider, model, key: key.name, idleMs: RECOVERY_PROBE_IDLE_MS }))
    return { ...target, firstKeyId: key.id, firstIsCheck: true, sessionKeyId: target.firstKeyId }
  }
  return target
}

/** planKeys once any trial is settled: the held and backed-off keys left out, and a due hold's check. */
function planWithKeys(components: PlannerComponents, target: PlannedTarget, keys: readonly BalancerKey[], input: KeyPlanInput, table: RotationWeights | undefined, weights: readonly number[]): KeyPlan {
  const { holds, backoffs } = components
  const { provider, model } = target
  const { now, log } = input
  const aligned = table !== undefined && weights === table.weights
  // The hot path: the table, rebuilt whenever holds or backoffs change, saw no key held or backed off.
  if (aligned && table.heldIndexes.length === 0) {
    const first = target.firstKeyId === undefined ? -1 : indexOfKey(keys, target.firstKeyId)
    const plan: KeyPlan = { weights, leftOut: NO_LEFT_OUT, first, check: target.firstIsCheck ? first : -1, checkDue: target.firstIsCheck && first >= 0, everyKeyHeld: false }
    // A trial or probe that took a session's request: the session's own key next.
    if (target.sessionKeyId !== undefined) plan.then = indexOfKey(keys, target.sessionKeyId)
    return plan
  }
  // A plain draw (no check, no session key) while no left-out key is due yet: the plan of the last such request.
  const plain = aligned && target.firstKeyId === undefined
  if (plain) {
    const settled = settledPlans.get(table)
    if (settled !== undefined && now < settled.validUntil) {
      const plan = settled.plan
      if (log.enabled || log.recording) {
        log.add(skipLine({ provider, model, skipped: plan.leftOut.length, total: keys.length }))
        if (log.recording) noteSkipped(components, log, provider, model, plan.leftOut)
      }
      return plan
    }
  }
  let leftOut: KeyLeftOut[] | null = null
  let first = target.firstKeyId === undefined ? -1 : indexOfKey(keys, target.firstKeyId)
  let check = target.firstIsCheck ? first : -1
  let claimed = false
  const session = first >= 0 && check < 0
  // The session's own key, should a check, trial or probe take its request first: the next attempt goes back there.
  let then = session ? first : target.sessionKeyId === undefined ? -1 : indexOfKey(keys, target.sessionKeyId)
  // Only the keys the table saw held or backed off can be: every hold and backoff is announced and rebuilds it.
  const candidates = aligned ? table.heldIndexes : null
  const count = candidates === null ? keys.length : candidates.length
  for (let position = 0; position < count; position++) {
    const index = candidates === null ? position : candidates[position]!
    const key = keys[index]!
    const backedOffUntil = backoffs.backedOffUntil(provider, key.id, model, now)
    const held = holds.isHeld(provider, key.id, model)
    if (!held && backedOffUntil === 0) continue
    if (index === check) continue
    // A session keeping its key lets others take the check first: it claims only once the key is GRACE past due.
    if (held && check < 0 && holds.claimCheck(provider, key.id, model, session ? now - SESSION_CHECK_GRACE_MS : now)) {
      first = index
      check = index
      claimed = true
      log.check = { provider, model, keyId: key.id }
      log.add(checkLine({ provider, model, key: key.name }))
      continue
    }
    // The session's own key is held or backed off now: it is left out like any other.
    if (index === first) first = -1
    if (index === then) then = -1
    ;(leftOut ??= []).push(leftOutKey(components, provider, model, key, index, held, backedOffUntil))
  }
  if (leftOut === null) return { weights, leftOut: NO_LEFT_OUT, first, check, checkDue: check >= 0, everyKeyHeld: false, then: check >= 0 && then !== check ? then : -1 }
  if (leftOut.length === keys.length) {
    // Every key is held or backed off and none could be checked: send anyway, one attempt, on the one due soonest.
    let soonest = leftOut[0]!
    for (const candidate of leftOut) if (candidate.until < soonest.until) soonest = candidate
    const soonestHeld = holds.isHeld(provider, soonest.keyId, model)
    // Its answer is a check only once the key is due (its slot taken by a check still out): before that it cannot move the hold.
    const due = soonestHeld && soonest.until <= now
    log.add(everyKeyHeldLine({ provider, model, key: soonest.keyName }, due))
    const others = leftOut.filter((candidate) => candidate !== soonest)
    if (log.recording) noteSkipped(components, log, provider, model, others)
    if (due) log.check ??= { provider, model, keyId: soonest.keyId }
    // One attempt on it either way (`check` bounds the rotation): a held key is not retried within the request.
    return { weights, leftOut: others, first: soonest.index, check: soonestHeld ? soonest.index : -1, checkDue: due, everyKeyHeld: true }
  }
  if (log.enabled || log.recording) log.add(skipLine({ provider, model, skipped: leftOut.length, total: keys.length }))
  if (log.recording) noteSkipped(components, log, provider, model, leftOut)
  const plan: KeyPlan = { weights, leftOut, first, check, checkDue: check >= 0, everyKeyHeld: false, then: check >= 0 && then !== check ? then : -1 }
  if (plain && !claimed) {
    // Valid until the first left-out key is due (a check to claim) or its backoff ends; any other change rebuilds the table.
    let validUntil = Number.POSITIVE_INFINITY
    for (const key of leftOut) if (key.until < validUntil) validUntil = key.until
    if (validUntil > now) {
      Object.freeze(leftOut)
      settledPlans.set(table, { plan: Object.freeze(plan), validUntil })
    }
  }
  return plan
}

/** A trial's plan: every failed key but the trial's own is left out, dead for the request. */
function leaveOutFailed(plan: KeyPlan, failedIndexes: readonly number[], keys: readonly BalancerKey[]): KeyPlan {
  const leftOut = [...plan.leftOut]
  for (const index of failedIndexes) {
    if (index === plan.first || leftOut.some((key) => key.index === index)) continue
    const key = keys[index]!
    leftOut.push({ index, keyId: key.id, keyName: key.name, reason: 'failed', dead: true, until: 0 })
  }
  return { ...plan, leftOut }
}

/** Leaves the keys left out in the request's log, for the request log's routing summary. */
function noteSkipped(components: PlannerComponents, log: RoutingLog, provider: string, model: string, leftOut: readonly KeyLeftOut[]): void {
  for (const key of leftOut) {
    const reason = key.reason === 'backed_off' ? 'rate_limit_window' : (components.holds.holdsOn(provider, key.keyId, model)[0]?.entry.reason ?? 'held')
    ;(log.skipped ??= []).push({ provider, model, keyId: key.keyId, keyName: key.keyName, reason })
  }
}

function leftOutKey(components: PlannerComponents, provider: string, model: string, key: BalancerKey, index: number, held: boolean, backedOffUntil: number): KeyLeftOut {
  if (!held) return { index, keyId: key.id, keyName: key.name, reason: 'backed_off', dead: false, until: backedOffUntil }
  let until = 0
  let dead = false
  let origins: TraceOrigin[] | undefined
  for (const route of components.holds.holdsOn(provider, key.id, model)) {
    until = Math.max(until, route.dueAt)
    if (killsKeyForRequest(route.entry.reason)) dead = true
    if (route.entry.origin !== undefined) (origins ??= []).push(route.entry.origin)
  }
  const left: KeyLeftOut = { index, keyId: key.id, keyName: key.name, reason: 'held', dead, until: Math.max(until, backedOffUntil) }
  if (origins !== undefined) left.origins = origins
  return left
}

function indexOfKey(keys: readonly BalancerKey[], keyId: string): number {
  return keys.findIndex((key) => key.id === keyId)
}

/** The rotation weights of `keys`: the balancer's shared array when its keys are the same in the same order, else by key id. */
function alignWeights(keys: readonly BalancerKey[], table: RotationWeights | undefined): readonly number[] {
  // The same key list as last time for this table (the registry keeps one list per provider and model): known aligned.
  if (table !== undefined && alignedKeys.get(table) === keys) return table.weights
  if (table !== undefined && table.keyIds.length === keys.length && table.keyIds.every((keyId, index) => keyId === keys[index]!.id)) {
    alignedKeys.set(table, keys)
    return table.weights
  }
  return keys.map((key) => {
    const index = table === undefined ? -1 : table.keyIds.indexOf(key.id)
    return index < 0 ? key.weight : table!.weights[index]!
  })
}

/** The key rotation of one target's attempts from its key plan: keys left out are dead (for the request) or only waiting (a 429 at the end). */
export function keyRotationFor(plan: KeyPlan, policy: RetryPolicy, random: () => number, alternatives = false): KeyRotation {
  let split = plan.leftOut.length === 0 ? NO_SPLIT : leftOutSplits.get(plan)
  if (split === undefined) {
    const unavailable: number[] = []
    const waiting: number[] = []
    let weightless = true
    for (const key of plan.leftOut) {
      ;(key.dead ? unavailable : waiting).push(key.index)
      if (plan.weights[key.index]! > 0) weightless = false
    }
    split = { unavailable, waiting, weightless }
    // A shared plan (frozen) is split once.
    if (Object.isFrozen(plan)) leftOutSplits.set(plan, split)
  }
  // Keys left out weigh 0 in the table (held and backed-off keys do): the running sums draw as the rotation would.
  const cumulative = split.weightless ? cumulativeOf(plan.weights) : undefined
  return new KeyRotation({ weights: plan.weights, policy, random, unavailable: split.unavailable, waiting: split.waiting, first: plan.first, once: plan.check, then: plan.then, cumulative, alternatives })
}

/** The left-out keys of shared plans, split as the rotation takes them. */
const leftOutSplits = new WeakMap<KeyPlan, { unavailable: readonly number[]; waiting: readonly number[]; weightless: boolean }>()
const NO_SPLIT = Object.freeze({ unavailable: NO_INDEXES, waiting: NO_INDEXES, weightless: true })

/** Running sums of shared weight arrays (a table's), for the first draw's binary search; kept as long as the array. */
const cumulativeWeights = new WeakMap<readonly number[], Float64Array>()

function cumulativeOf(weights: readonly number[]): Float64Array | undefined {
  if (weights.length < 8) return undefined
  let cumulative = cumulativeWeights.get(weights)
  if (cumulative === undefined) {
    cumulative = new Float64Array(weights.length)
    let total = 0
    for (let index = 0; index < weights.length; index++) {
      const weight = weights[index]!
      if (weight > 0) total += weight
      cumulative[index] = total
    }
    // A table's array is shared by every request until its rebuild; a per-request one just goes with the request.
    cumulativeWeights.set(weights, cumulative)
  }
  return cumulative
}
