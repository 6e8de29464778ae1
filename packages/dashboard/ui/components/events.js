// History events as a list of sentences (the words are lib/events.js's).
import { html } from '../lib/html.js'
import { stamp } from '../lib/format.js'
import { describeEvent } from '../lib/events.js'

/** @typedef {import('../lib/answers').HistoryEventEntry} HistoryEventEntry */

/**
 * Events in order, each a sentence with its time and node.
 * @param {{ events: HistoryEventEntry[] | undefined, keyName?: (id: string) => string, testid?: string }} props
 */
export function EventList({ events, keyName, testid }) {
  if (!events || events.length === 0) return html`<p class="empty">None.</p>`
  return html`<ol class="events" data-testid=${testid}>${events.map((event, at) => html`<li key=${at} data-kind=${event.kind}>
    <span class="muted small">${stamp(event.at)}<br />${event.node_id}</span><span>${describeEvent(event, keyName)}</span>
  </li>`)}</ol>`
}
