// The switches of adaptive routing (reference: "Configuration") and what a change sends: a PUT
// replaces all five, so every change sends all five as they are, plus the one changed.

/** @typedef {import('./answers').ConfigAnswer} ConfigAnswer */

/**
 * The five switches: [field, label, what it does], in routing's SWITCH_NAMES order (settings.test.ts holds the two together).
 * @type {[string, string, string][]}
 */
export const SWITCHES = [
  ['direction_selection_enabled', 'Provider selection', 'Routing picks the provider for each model by score. Off: a request keeps the provider and fallbacks it came with.'],
  ['route_selection_enabled', 'Key selection', 'Routing weighs each key by its errors, latency and load. Off: keys are picked by their static weights (held keys are still skipped).'],
  ['append_fallbacks_to_pinned', 'Append fallbacks to pinned requests', 'A request that names its provider still gets the healthy providers for its model as fallbacks behind its own.'],
  ['reroute_failed_directions', 'Re-route failed providers', 'A request that names a provider that is failing for its model is sent to a healthy provider for the same model instead.'],
  ['prune_failed_fallbacks', 'Prune failed fallbacks', 'Providers failing for the model are dropped from a request’s own fallback list.'],
]

const FIVE = SWITCHES.map(([field]) => field)

/**
 * The settings beside the five that the config API may report (history, request log): [label, what it does].
 * @type {Record<string, [string, string]>}
 */
export const EXTRA_SETTINGS = {
  history_enabled: ['Record routing history', 'Every node records what routing saw and did (states, holds, checks, releases, snapshots, request counts) for the dashboard and incidents.'],
  history_retention_days: ['History kept for (days)', 'The cluster’s leader drops whole days of history older than this, once a day.'],
}

/** The body of PUT .../config that changes `field` to `value`: the five as they are (a missing one off), and the change. */
export function settingsBody(/** @type {ConfigAnswer} */ config, /** @type {string} */ field, /** @type {unknown} */ value) {
  return { ...Object.fromEntries(FIVE.map((name) => [name, config[name] === true])), [field]: value }
}

/** The settings the node reports beyond the five (not `pending`), in its order. */
export const extraSettings = (/** @type {ConfigAnswer | undefined} */ config) => (config ? Object.entries(config).filter(([name]) => !FIVE.includes(name) && name !== 'pending') : [])

/** A setting in an incident's "Settings in effect": on, off, or — when it was not recorded. */
export const switchValue = (/** @type {unknown} */ value) => (value === true ? 'on' : value === false ? 'off' : '—')
