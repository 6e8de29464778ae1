// History events as sentences (kinds of GET .../history/issues/:id `events` and `recent_changes`).
import { labelOf, reasonLabel, stateLabel } from './format.js'

/** @typedef {import('./answers').HistoryEventEntry} HistoryEventEntry */

const CHECK = { refused_again: 'refused again', inconclusive: 'no answer about the key', served: 'served' }
const RELEASED_BY = { check: 'a check that served', operator: 'an operator', edit: 'an edit of the key', delete: 'the key being deleted' }

/** A setting's value in an event: on, off, — (missing), else as it is. */
export const onOff = (/** @type {unknown} */ value) => (value === true ? 'on' : value === false ? 'off' : value === undefined ? '—' : String(value))

/** One event in words; `keyName(id)` names keys. Unknown kinds are shown with their fields. */
export function describeEvent(/** @type {HistoryEventEntry} */ event, keyName = (/** @type {string} */ id) => id) {
  const key = event.key_id ? keyName(event.key_id) : null
  const what = [event.provider, event.model, key].filter(Boolean).join(' · ')
  switch (event.kind) {
    case 'hold:placed':
      return `${event.origin === 'local' ? 'Saw the refusal and held' : 'Held, because a peer saw the refusal,'} ${what} (${reasonLabel(event.reason)}${event.wait_ms ? `, ${Math.round(event.wait_ms / 1000)} s` : ''}): “${event.message}”`
    case 'hold:checked':
      return `Checked ${what}: ${labelOf(CHECK, event.outcome ?? '')}${event.message ? ` — “${event.message}”` : ''}`
    case 'hold:released':
      return `Released ${what} after ${labelOf(RELEASED_BY, event.by ?? '')}`
    case 'route:state':
    case 'direction:state':
      return `${what}: ${stateLabel(event.from ?? '')} → ${stateLabel(event.to ?? '')}`
    case 'request:failed':
      return `A request failed on ${what}${event.failure_class ? ` (${reasonLabel(event.failure_class)})` : ''}${event.pinned ? `; it named ${event.named_provider ?? 'its provider'}, so routing could not move it` : ''}${event.kept_on_failing ? ', kept there because re-routing was off' : ''}`
    case 'settings:changed':
      return `Settings changed${event.origin ? ` (${event.origin})` : ''}: ${(event.fields ?? []).map((field) => `${field} ${onOff(event.before?.[field])} → ${onOff(event.after?.[field])}`).join(', ') || 'no switch'}`
    case 'key:edited':
      return `${event.created ? 'Added' : 'Edited'} key ${event.key_name ?? key ?? ''} of ${event.provider}${event.fields?.length ? ` (${event.fields.join(', ')})` : ''}`
    case 'key:deleted':
      return `Deleted key ${event.key_name ?? key ?? ''} of ${event.provider}`
    case 'provider:edited':
      return `Edited provider ${event.provider}${event.fields?.length ? ` (${event.fields.join(', ')})` : ''}`
    case 'provider:deleted':
      return `Deleted provider ${event.provider}`
    default: {
      const { at: _at, node_id: _node, region: _region, kind, entity: _entity, provider: _provider, model: _model, key_id: _key, ...rest } = event
      return `${kind} ${what} ${Object.keys(rest).length ? JSON.stringify(rest) : ''}`
    }
  }
}
