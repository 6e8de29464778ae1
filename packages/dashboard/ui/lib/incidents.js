// The Incidents page's questions and words (reference: "Incidents"): its filters in the URL,
// the API query they make, and how one incident reads in the table and the detail sheet.
import { labelOf, plural, reasonLabel, stateLabel } from './format.js'
import { questionWindow, withQuery } from './query.js'

/** @typedef {import('./answers').IncidentEntry} IncidentEntry */
/** @typedef {import('./query.js').TimeWindow} TimeWindow */

export const ISSUES_PATH = '/api/adaptive-routing/history/issues'
/** Incidents per page. */
export const INCIDENTS_PAGE = 25
/** The sidebar filters, each a comma-separated route param named as the API names it. */
export const INCIDENT_FILTERS = ['statuses', 'providers', 'models', 'reasons', 'states', 'scopes', 'regions', 'nodes']
/**
 * [value, label]
 * @type {[string, string][]}
 */
export const INCIDENT_SORTS = [['priority', 'Needs attention first'], ['newest', 'Newest'], ['oldest', 'Oldest'], ['longest', 'Longest'], ['shortest', 'Shortest']]
/** Every status an incident is still open in. */
export const OPEN_STATUSES = 'attention,recovering,mitigated,waiting'
export const SCOPES = { route: 'a key on a model', direction: 'a provider and model', key: 'a key on every model' }
const ACTIONS = { held: 'held the key', moved_traffic: 'moved traffic off', reduced_traffic: 'gave it less traffic' }
/** The reasons a key is held for (an incident with one of them has a Held key card): routing's HOLD_REASONS, which the browser cannot import (incidents.test.ts holds the two together). */
export const HOLD_REASONS = ['credential', 'quota', 'model_access', 'model_gone', 'region_blocked', 'rate_limit']

/** The API query of the route: the window, the page, the sort, the search and every filter param. */
export function incidentQuery(/**
 * @type {Record<string, string>} */ params, /**
 * @type {{ from: number | string, to: number | string | null }}
 */ window) {
  /** @type {import('./query.js').QueryValues} */
  const query = { from: window.from, to: window.to, limit: INCIDENTS_PAGE, offset: params.inc_offset ?? 0, sort: params.sort, search: params.search }
  for (const name of INCIDENT_FILTERS) query[name] = params[name]
  return query
}

/**
 * The page's paths: `page` to fetch, `question` (the same without the clock, so a Live tick is
 * not a new question), and `all` (the window unfiltered, for "out of N"; null with no filter on).
 */
export function incidentPaths(/**
 * @type {Record<string, string>} */ params, /**
 * @type {TimeWindow}
 */ window) {
  const filtered = INCIDENT_FILTERS.some((name) => params[name]) || Boolean(params.search)
  return {
    page: withQuery(ISSUES_PATH, incidentQuery(params, window)),
    question: withQuery(ISSUES_PATH, incidentQuery(params, questionWindow(window))),
    all: filtered ? withQuery(ISSUES_PATH, { from: window.from, to: window.to, limit: 1, offset: 0 }) : null,
    filtered,
  }
}

/** Where an incident is: "openai · gpt-4o · prod-1", "azure · every model". */
export function incidentWhere(/**
 * @type {Pick<IncidentEntry, 'provider' | 'models' | 'key_ids'>} */ incident, keyName = (/**
 * @type {string}
 */ id) => id) {
  return `${incident.provider} · ${incident.models.join(', ') || 'every model'}${incident.key_ids.length ? ` · ${incident.key_ids.map(keyName).join(', ')}` : ''}`
}

/** What an incident was: its reasons in words, else its worst state. */
export const incidentReasons = (/** @type {Pick<IncidentEntry, 'reasons' | 'worst_state'>} */ incident) => incident.reasons.map(reasonLabel).join(', ') || stateLabel(incident.worst_state)

/** The Cause column: the reasons, what routing did, and how often it checked. */
export function incidentCause(/** @type {IncidentEntry} */ incident) {
  return `${incidentReasons(incident)}; routing ${labelOf(ACTIONS, incident.action)}${incident.checks ? `, checked ${plural(incident.checks, 'time')}` : ''}`
}
