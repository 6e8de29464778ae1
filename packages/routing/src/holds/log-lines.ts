/** Routing-log lines for holds, for a person reading one request's log (reference: "In the request logs"). */
import type { HoldReason } from '../failures/failure-class.ts'
import type { ReleaseCause } from './entry.ts'
import { MINIMUM_HOLD_MS } from './ladder.ts'

/** What each reason means, as the end of "azure refused key … for gpt-4o: ___". */
const REASON_PHRASES: Record<HoldReason, string> = {
  credential: 'the key was rejected',
  quota: 'the key is out of quota',
  model_access: 'the key cannot reach this model',
  model_gone: 'the model was retired',
  region_blocked: 'the provider refuses requests from this region',
  rate_limit: 'the key is rate limited',
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A key as the log shows it: a UUID shortened to its first group (`3f2a9c1e-...`), any other id or name as is. */
export function keyLabel(key: string): string {
  return UUID.test(key) ? `${key.slice(0, 8)}-...` : key
}

/** A wait as a person says it: `400ms`, `10s`, `1m`, `2m 30s`, `1h 5m`; rounded to the second from 1 s up. */
export function formatWait(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`
  const seconds = Math.max(0, Math.round(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const hours = Math.floor(seconds / 3600)
  const minutes = Math.floor((seconds % 3600) / 60)
  const rest = seconds % 60
  const parts = hours > 0 ? [`${hours}h`, minutes > 0 ? `${minutes}m` : ''] : [`${minutes}m`, rest > 0 ? `${rest}s` : '']
  return parts.filter(Boolean).join(' ')
}

/** The route a line talks about: which provider, model and key. */
export interface LoggedRoute {
  provider: string
  /** The model of the request the line belongs to. */
  model: string
  /** The key's name or id; ids that are UUIDs are shortened. */
  key: string
}

/** A new hold (warn). `waitMs` is this node's wait; `askedWaitMs` the provider's own, when it gave one. */
export function holdLine(route: LoggedRoute & { reason: HoldReason; wholeKey: boolean; waitMs: number; askedWaitMs: number | null }): string {
  const refused = `${route.provider} refused key ${keyLabel(route.key)} for ${route.model}: ${REASON_PHRASES[route.reason]}.`
  const from = route.wholeKey ? ' from every model' : ''
  if (route.askedWaitMs !== null && route.askedWaitMs < MINIMUM_HOLD_MS) {
    return `${refused} It asked for ${formatWait(route.askedWaitMs)}; holding that key back${from} for ${formatWait(MINIMUM_HOLD_MS)}, which is the shortest hold the load balancer applies.`
  }
  return `${refused} Holding that key back${from} for ${formatWait(route.waitMs)}, then checking whether it can serve again`
}

/** A check answered and the hold goes on (warn): refused again, or an answer that says nothing about the key. */
export function renewLine(route: LoggedRoute & { reason: HoldReason; waitMs: number; refusedAgain: boolean }): string {
  const where = `${route.provider}/${route.model}`
  if (route.refusedAgain) {
    return `Key ${keyLabel(route.key)} still cannot serve ${where}: ${REASON_PHRASES[route.reason]}. Holding it back for ${formatWait(route.waitMs)}, then checking again`
  }
  return `The check of key ${keyLabel(route.key)} for ${where} failed without saying anything about the key. Holding it back for another ${formatWait(route.waitMs)}, then checking again`
}

/** Held keys left out of key selection (info). */
export function skipLine(direction: { provider: string; model: string; skipped: number; total: number }): string {
  const noun = direction.total === 1 ? 'key' : 'keys'
  return `Skipping ${direction.skipped} of ${direction.total} ${noun} for ${direction.provider}/${direction.model} that the provider refused`
}

/** This request is the node's one check of a due key (info). */
export function checkLine(route: LoggedRoute): string {
  return `Checking whether key ${keyLabel(route.key)} can serve ${route.provider}/${route.model} again after the provider refused it`
}

/** Every key that serves the model is held, so the request goes anyway; it counts as the check only when that key is due (info). */
export function everyKeyHeldLine(route: LoggedRoute, due: boolean): string {
  const start = `Every key of ${route.provider} that serves ${route.model} is held; sending this request to key ${keyLabel(route.key)} anyway`
  // Only a check moves a hold (issue 36, item 6): before the key is due, a refusal leaves it as it is.
  return due ? `${start}, and its answer counts as a check` : `${start}, once; its check is not due yet, so a refusal leaves the hold as it is`
}

/** A provider held on every key has a due key: this request checks it first, healthy providers behind it (info). */
export function providerCheckLine(route: LoggedRoute): string {
  return `Every key of ${route.provider} is held for ${route.model}; checking key ${keyLabel(route.key)} with this request first, with the healthy providers as fallbacks`
}

/** What each release cause says after "Key <key>", given where (`provider/model`). */
const RELEASE_PHRASES: Record<ReleaseCause, (where: string) => string> = {
  served: (where) => `is serving ${where} again`,
  settled: (where) => `got past the refusal it was held for on ${where}, so that hold is released`,
  operator: () => 'was released by an operator; it starts again from a 30s hold if the provider refuses it again',
  key_edit: () => 'was edited, so every hold on it is released',
  deleted: () => 'was deleted, so its holds are removed',
}

/** A hold ended (info). */
export function releaseLine(route: LoggedRoute & { cause: ReleaseCause }): string {
  return `Key ${keyLabel(route.key)} ${RELEASE_PHRASES[route.cause](`${route.provider}/${route.model}`)}`
}
