// Held keys as the pages read them, from GET /api/adaptive-routing/conditions: which holds
// touch a key, where a hold stands against the clock, and what Release sends.
import { duration, plural } from './format.js'

/** @typedef {import('./answers').HoldEntry} HoldEntry */

/** The holds on `keyId` of `provider` that bar `model`: a whole-key hold, or one of that model. */
export function holdsOn(/** @type {HoldEntry[] | undefined} */ holds, /** @type {string} */ provider, /** @type {string} */ model, /** @type {string} */ keyId) {
  return (holds ?? []).filter((hold) => hold.provider === provider && hold.key_id === keyId && (hold.model === null || hold.model === model))
}

/** The holds on any of `keyIds` of `provider`, on any model (an incident's keys). */
export function holdsOnKeys(/** @type {HoldEntry[] | undefined} */ holds, /** @type {string} */ provider, /** @type {string[]} */ keyIds) {
  return (holds ?? []).filter((hold) => hold.provider === provider && keyIds.includes(hold.key_id))
}

/**
 * Where a hold stands, from the conditions API's own fields: `held` until its next check
 * (`next_check_at` at least a second ahead), `due` once that time has come (this node lets the
 * check through with the next request the key could serve), with the rung and the checks so far.
 */
export function holdStatus(/** @type {HoldEntry} */ hold, /** @type {number} */ now) {
  const rung = `ladder rung ${hold.rung}`
  const checks = hold.checks === 0 ? 'no check yet' : `${plural(hold.checks, 'check')} so far`
  const wait = (Date.parse(hold.next_check_at) - now) / 1000
  if (wait >= 1) return { status: 'held', label: 'Held', detail: `${rung}, ${checks}; next check in ${duration(wait)}` }
  return { status: 'due', label: 'Check due', detail: `${rung}, ${checks}; the next request this key could serve carries the check` }
}

/** A hold's identity on the page ("openai:k1:*" for a whole-key hold). */
export const holdLabel = (/** @type {HoldEntry} */ hold) => `${hold.provider}:${hold.key_id}:${hold.model ?? '*'}`

/** The body of POST .../conditions/clear that releases exactly this hold (the whole key, or its one model). */
export function releaseBody(/** @type {HoldEntry} */ hold) {
  return hold.model === null ? { provider: hold.provider, key_id: hold.key_id } : { provider: hold.provider, key_id: hold.key_id, model: hold.model }
}

/** What a release answered (`count` holds released), in words. */
export const releasedText = (/** @type {number} */ released) => (released === 0 ? 'Nothing named was held any more.' : `Released ${plural(released, 'hold')} on every node.`)
