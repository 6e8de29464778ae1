/** Public types of adaptive load balancing: its configuration, its input and its reports. Spec: reference/adaptive-load-balancing.txt. */
import type { FailureClass } from '../failures/failure-class.ts'

/** A route's health, per key and model (reference: "Key Capabilities"). */
export type RouteState = 'healthy' | 'degraded' | 'failed' | 'recovering'

/** One configured key as the balancer sees it. `models: ['*']` serves every model. */
export interface BalancerKey {
  id: string
  name: string
  models: readonly string[]
  /** The static weight, used when key selection is not adaptive. */
  weight: number
  /** Model name as callers say it -> the name this key's upstream knows; a key serves its aliases' models too. */
  aliases?: Readonly<Record<string, string>>
}

/** True when the key names the model itself: in its `models`, or as one of its `aliases`. */
export function keyNamesModel(key: BalancerKey, model: string): boolean {
  return key.models.includes(model) || (key.aliases !== undefined && Object.hasOwn(key.aliases, model))
}

/** True when the key serves the model: it names it (models or aliases), or it is a wildcard (`"*"`) key. */
export function keyServesModel(key: BalancerKey, model: string): boolean {
  return keyNamesModel(key, model) || key.models.includes('*')
}

/** One provider and its keys, in the configured order. */
export interface BalancerProvider {
  provider: string
  keys: readonly BalancerKey[]
}

/** A direction (design vocabulary): provider + model. Also a request target or fallback. */
export interface Direction {
  provider: string
  model: string
}

/** A route: provider + model + key. */
export interface RouteRef extends Direction {
  keyId: string
}

/** The map key of a route (its metrics, its trial round). NUL cannot appear in a provider, model or key id from JSON config. */
export function routeKey(provider: string, model: string, keyId: string): string {
  return `${provider}\u0000${model}\u0000${keyId}`
}

/** True when two directions name the same provider and model. */
export function sameDirection(left: Direction, right: Direction): boolean {
  return left.provider === right.provider && left.model === right.model
}

/** Prompt and completion tokens of a served answer, as the provider reported them (a long completion is not a slow provider). */
export interface TokenUsage {
  promptTokens: number
  completionTokens: number
}

/** The outcome of one upstream attempt, as the gateway reports it. */
export interface AttemptOutcome extends RouteRef, Partial<TokenUsage> {
  /** null when the attempt was served. */
  failureClass: FailureClass | null
  latencyMs: number
  now: number
}

/** Whether a key is held out of rotation for a model; injected so the balancer stays free of the hold ladder. */
export type HeldPredicate = (provider: string, keyId: string, model: string) => boolean

/** The five operator switches (reference: "Configuration"), named as in config.json, in the reference's order. */
export const SWITCH_NAMES = ['direction_selection_enabled', 'route_selection_enabled', 'append_fallbacks_to_pinned', 'reroute_failed_directions', 'prune_failed_fallbacks'] as const

/** One of the five switches. */
export type SwitchName = (typeof SWITCH_NAMES)[number]

/** The five switches' values. */
export type LoadBalancerSettings = Record<SwitchName, boolean>

/** The reference defaults: both selection switches on, the three pinned/failed behaviours opt-in. */
export const defaultLoadBalancerSettings: Readonly<LoadBalancerSettings> = Object.freeze({
  direction_selection_enabled: true,
  route_selection_enabled: true,
  append_fallbacks_to_pinned: false,
  reroute_failed_directions: false,
  prune_failed_fallbacks: false,
})

/** The parts of a route's score, each in [0, 1], for the routes API and the score chart. */
export interface ScoreParts {
  /** From the time-decayed error rate; 1 = the error rate is at or above the full-penalty rate. */
  errorPenalty: number
  /** The latency score: how much slower than its peers and its own baseline (0 = not slower). */
  latencyPenalty: number
  /** Load over the fair share of its direction (1 = exactly fair); not clamped. */
  utilisation: number
  /** Progress of a recovering route towards healthy, 0..1 (1 for other states). */
  recoveryProgress: number
}

/** One route as the routes API shows it. */
export interface RouteSnapshot extends RouteRef {
  keyName: string
  /** `failed` while held, whatever the metrics say (reference: "Held Keys"). */
  state: RouteState
  held: boolean
  weight: number
  /** The share of its direction's traffic its weight asks for. */
  expectedShare: number
  /** The share of its direction's recent attempts it actually got. */
  actualShare: number
  errorRate: number
  /** Recent mean latency of served attempts, ms; null before any. */
  latencyMs: number | null
  inFlight: number
  parts: ScoreParts
}
