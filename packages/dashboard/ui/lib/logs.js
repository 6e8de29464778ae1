// The request log's questions and words: the GET /api/logs query a route makes, one request's
// routing summary in sentences, and its routing tags in the table.
import { labelOf, reasonLabel } from './format.js'
import { localInput, questionWindow, withQuery } from './query.js'

/** @typedef {import('./answers').LogEntry} LogEntry */
/** @typedef {import('./query.js').TimeWindow} TimeWindow */

export const LOGS_PATH = '/api/logs'
/** Requests per page. */
export const LOGS_PAGE = 50
/**
 * The yes/no filters: [param, label, what it means].
 * @type {[string, string, string][]}
 */
export const FLAGS = [
  ['moved_off', 'Moved off', 'Routing moved it off the provider it named'],
  ['check', 'Checked a held key', 'It was the check of a held key'],
  ['added_fallback', 'Served by an added fallback', 'A fallback that routing added served it'],
]
/** The list filters, as the API names them; in the route each is `log_<name>` (the incidents' share the window's URL). */
export const LOG_FILTERS = ['providers', 'models', 'status', 'failure_classes', 'nodes', 'picked_by', 'key_ids']
/**
 * [value, label]
 * @type {[string, string][]}
 */
export const LOG_SORTS = [['newest', 'Newest'], ['oldest', 'Oldest'], ['slowest', 'Slowest'], ['fastest', 'Fastest'], ['most_tokens', 'Most tokens']]

/** The API query of the route: the window, then every filter param as the API names it. */
export function logQuery(/**
 * @type {Record<string, string>} */ params, /**
 * @type {{ from: number | string, to: number | string | null }}
 */ window) {
  /** @type {import('./query.js').QueryValues} */
  const query = { from: window.from, to: window.to, limit: LOGS_PAGE, offset: params.log_offset ?? 0, sort: params.log_sort, search: params.log_search, session_id: params.session_id, request_id: params.request_id }
  for (const name of LOG_FILTERS) query[name] = params[`log_${name}`]
  for (const [name] of FLAGS) query[name] = params[name]
  return query
}

/** The page's path, and the same question without the clock (a Live tick is not a new question). */
export function logPaths(/**
 * @type {Record<string, string>} */ params, /**
 * @type {TimeWindow}
 */ window) {
  return { page: withQuery(LOGS_PATH, logQuery(params, window)), question: withQuery(LOGS_PATH, logQuery(params, questionWindow(window))) }
}

const CHECK_OUTCOMES = { served: 'the key served, so its hold was released', refused_again: 'the provider refused it again, so it stays held', inconclusive: 'the answer said nothing about the key, so it stays held on the same rung', not_sent: 'the check was not sent' }

/** The routing summary of one request as sentences, from its fields as the API gives them. */
export function routingSentences(/** @type {LogEntry} */ entry) {
  const { requested, served, routing } = entry
  const asked = requested.provider ? `${requested.provider}/${requested.model}` : requested.model
  const lines = []
  lines.push(requested.provider ? `The request named ${asked}.` : `The request asked for ${asked} without naming a provider, so routing picked one.`)
  if (routing.moved_off) {
    lines.push(`${routing.moved_off.provider} was failing for this model (${reasonLabel(routing.moved_off.reason)}), and with re-routing on, routing sent it to ${served.provider ?? 'another provider'}${served.model ? `/${served.model}` : ''} instead.`)
  }
  if (routing.pinned_kept_failed) lines.push(`${requested.provider} was failing, but re-routing was off, so routing kept the request on it.`)
  if (served.provider && entry.status < 400) lines.push(`${served.provider}/${served.model} served it with key ${served.key_name}.`)
  else lines.push(`It failed with ${entry.status}${entry.failure_class ? ` (${reasonLabel(entry.failure_class)})` : ''}: ${entry.message ?? 'no message'}.`)
  for (const key of routing.skipped_keys) lines.push(`It skipped ${key.key_name} on ${key.provider}/${key.model}: ${reasonLabel(key.reason)}.`)
  if (routing.check) lines.push(`It was the check of held key ${routing.check.key_name} on ${routing.check.provider}/${routing.check.model}: ${labelOf(CHECK_OUTCOMES, routing.check.outcome)}.`)
  if (routing.added_fallback_served) lines.push('A fallback that routing added (not one the request sent) served it.')
  if (routing.session_kept === true) lines.push('Its session kept it on the provider and key it had before.')
  if (routing.session_kept === false) lines.push('Its session had another provider or key, which was failing or held, so it moved.')
  return lines
}

/**
 * A request's routing as tags for its table row (`attention` marks one routing changed the
 * request's provider), then who picked the provider.
 */
export function routingTags(/** @type {LogEntry['routing']} */ routing) {
  /** @type {{ text: string, title?: string, attention?: boolean }[]} */
  const tags = []
  if (routing.moved_off) tags.push({ text: `moved off ${routing.moved_off.provider}`, title: `moved off ${routing.moved_off.provider}: ${routing.moved_off.reason}`, attention: true })
  if (routing.check) tags.push({ text: `check · ${routing.check.outcome.replaceAll('_', ' ')}`, title: `checked held key ${routing.check.key_name}: ${routing.check.outcome}` })
  if (routing.added_fallback_served) tags.push({ text: 'added fallback' })
  if (routing.skipped_keys.length > 0) tags.push({ text: `skipped ${routing.skipped_keys.length}`, title: routing.skipped_keys.map((key) => `${key.key_name}: ${reasonLabel(key.reason)}`).join(', ') })
  return { tags, pickedBy: routing.picked_by === 'routing' ? 'routing picked' : 'caller named' }
}

/** The route params of "View in routing history": the request's stretch as a custom window, its entities marked. */
export function historyParams(/** @type {NonNullable<LogEntry['history']>} */ history) {
  return { window: 'custom', from: localInput(history.from), to: localInput(history.to), live: null, entities: history.entities.join(',') }
}
