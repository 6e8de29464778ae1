/**
 * Who is calling the inference API (issue 13), checked first on every surface. With no gateway
 * key in the fleet, only loopback callers are served; once one exists, every call needs one, as
 * `Authorization: Bearer <key>` or `x-api-key: <key>`, within its per-minute limits.
 */
import type { IncomingMessage } from 'node:http'
import { GatewayError } from '../errors.ts'
import type { GatewayKey, GatewayKeyRing } from './gateway-keys.ts'
import type { LimitRefusal } from './limits.ts'
import type { CallerLimiter } from '../workers/sharing.ts'
import { isLocalCaller } from './network.ts'
import { startingError, type ReadinessState } from '../boot/readiness.ts'

export interface CallerComponents {
  keys: GatewayKeyRing
  limiter: CallerLimiter
  /** Whether the node may serve yet (boot/readiness.ts): until it knows its gateway keys, every call is a 503. */
  readiness?: Pick<ReadinessState, 'ready' | 'get'>
}

const HOW_TO_KEYS = 'Create a gateway key with POST /api/gateway-keys {"name": "my-app"} (a settings.update admin token), or gateway_keys in config.json, and send it as "Authorization: Bearer <key>" or "x-api-key: <key>".'

/** The secret a caller sent: `Authorization: Bearer <key>`, else `x-api-key`. */
export function offeredKey(incoming: IncomingMessage): string | null {
  const authorization = incoming.headers.authorization
  if (authorization !== undefined && authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ') {
    const value = authorization.slice(7).trim()
    if (value !== '') return value
  }
  const apiKey = incoming.headers['x-api-key']
  return typeof apiKey === 'string' && apiKey !== '' ? apiKey : null
}

/**
 * Authenticates an inference call and counts it against its key's limits: the gateway key it sent
 * (null: a loopback caller while no gateway key exists); throws a GatewayError (401, 429; 503
 * while the node is starting) otherwise. Every inference surface calls this first.
 */
export function authenticateCaller(components: CallerComponents, incoming: IncomingMessage): GatewayKey | null | Promise<GatewayKey> {
  // A node that has not loaded its gateway keys cannot tell "no key exists" from "not read yet" (issue 37).
  if (components.readiness !== undefined && !components.readiness.ready) throw startingError(components.readiness.get())
  if (components.keys.size === 0) {
    if (!isLocalCaller(incoming.socket.remoteAddress, incoming.socket.localPort, incoming.headers)) {
      throw new GatewayError('gateway_key_required', `No gateway key exists yet, so this gateway answers inference calls from loopback only. ${HOW_TO_KEYS}`)
    }
    return null
  }
  const secret = offeredKey(incoming)
  if (secret === null) throw new GatewayError('gateway_key_required', 'This gateway needs a gateway key: send it as "Authorization: Bearer <key>" or "x-api-key: <key>" (an operator creates keys with POST /api/gateway-keys or gateway_keys in config.json).')
  const key = components.keys.find(secret)
  if (key === undefined) throw new GatewayError('gateway_key_invalid', 'That gateway key is not known to this gateway (or was revoked).')
  const admitted = components.limiter.admit(key)
  if (admitted === null) return key
  if (admitted instanceof Promise) {
    return admitted.then((refusal) => {
      if (refusal !== null) throw rateLimited(key, refusal)
      return key
    })
  }
  throw rateLimited(key, admitted)
}

/** The 429 of a key over its limit, with retry-after at the window's end. */
function rateLimited(key: GatewayKey, refusal: LimitRefusal): GatewayError {
  const what = refusal.reason === 'requests' ? 'requests' : 'tokens'
  return new GatewayError('gateway_key_rate_limited', `Gateway key "${key.name}" used its ${refusal.limit} ${what} per minute across the fleet; retry in ${refusal.retryAfterSeconds} s.`, { retryAfterSeconds: refusal.retryAfterSeconds })
}

/** Throws 403 when the key may not use the model or names a provider outside its own; the engine filters what routing adds. */
export function checkCallerTarget(key: GatewayKey | null, model: string, fallbacks: readonly string[]): void {
  if (key === null || (key.providers === null && key.models === null)) return
  checkOne(key, model, 'model')
  fallbacks.forEach((fallback, index) => checkOne(key, fallback, `fallbacks[${index}]`))
}

function checkOne(key: GatewayKey, model: string, param: string): void {
  const slash = model.indexOf('/')
  const provider = slash > 0 ? model.slice(0, slash) : null
  const bare = slash > 0 ? model.slice(slash + 1) : model
  // A bare model is left to routing, which never sends it to a provider outside the key's (the engine skips them).
  if (key.providers !== null && provider !== null && !key.providers.has(provider)) {
    throw new GatewayError('gateway_key_forbidden', `Gateway key "${key.name}" may use providers ${[...key.providers].join(', ')} only (${param} names ${provider}).`, { param })
  }
  if (key.models !== null && !key.models.has(model) && !key.models.has(bare)) {
    throw new GatewayError('gateway_key_forbidden', `Gateway key "${key.name}" may use models ${[...key.models].join(', ')} only.`, { param })
  }
}
