// The four figures of a window (reference: "The Dashboard"), each opening its breakdown. Every
// number is a field of GET /api/adaptive-routing/history/summary, shown as it comes.
import { html } from '../lib/html.js'
import { navigate } from '../lib/route.js'
import { count, percent } from '../lib/format.js'

/** @typedef {import('../lib/answers').SummaryAnswer} SummaryAnswer */

/**
 * The four figures of the window, and the breakdown of the one open.
 * @param {{ summary: SummaryAnswer, open: string | null, onOpen: (name: string) => void }} props
 */
export function Figures({ summary, open, onOpen }) {
  const { incidents, requests } = summary
  const figure = (/** @type {string} */ name, /** @type {string} */ value, /** @type {string} */ label, /** @type {string} */ sub, subBad = false) => html`<button class=${`figure${open === name ? ' on' : ''}`} data-testid=${`figure-${name}`} aria-expanded=${open === name} onClick=${() => onOpen(name)}>
    <div class="value">${value}</div><div class="label">${label}</div><div class=${`sub${subBad ? ' bad' : ''}`}>${sub}</div>
  </button>`
  return html`<div class="figures">
    <div class="grid four">
      ${figure('incidents', count(incidents.total), 'Incidents', incidents.attention === 0 ? 'none need attention' : `${incidents.attention} need${incidents.attention === 1 ? 's' : ''} attention`, incidents.attention > 0)}
      ${figure('saved', count(requests.saved), 'Requests saved', 'moved off a failing provider or served by an added fallback')}
      ${figure('failed', count(requests.failed), 'Requests failed', requests.failed_avoidable === 0 ? 'none a setting could have avoided' : `${count(requests.failed_avoidable)} a setting could have avoided`, requests.failed_avoidable > 0)}
      ${figure('picked', percent(requests.routing_picked_share), 'Provider picked by routing', 'the rest named their provider')}
    </div>
    ${open ? html`<div class="card breakdown" data-testid="breakdown">${breakdown(open, summary)}</div>` : null}
  </div>`
}

function breakdown(/** @type {string} */ name, /** @type {SummaryAnswer} */ { incidents, requests }) {
  const row = (/** @type {string} */ label, /** @type {unknown} */ value) => html`<dt>${label}</dt><dd>${value}</dd>`
  if (name === 'incidents') {
    return html`<dl class="facts">
      ${row('Incidents in the window', incidents.total)}${row('Need attention', incidents.attention)}${row('Still ongoing', incidents.ongoing)}
    </dl><p><button class="secondary" onClick=${() => navigate('incidents', { statuses: null })}>Open incidents</button>
      <button class="secondary" onClick=${() => navigate('incidents', { statuses: 'attention' })}>Only those needing attention</button></p>`
  }
  if (name === 'saved') {
    return html`<dl class="facts">
      ${row('Moved off a failing provider by routing', requests.redirected)}${row('Served by a fallback routing added', requests.fallback_served)}${row('Requests saved', requests.saved)}
    </dl><p class="muted">Your own retries and fallback lists are not counted: these are requests only adaptive routing saved.</p>
    <p><button class="secondary" onClick=${() => navigate('logs', { moved_off: 'true', log_status: '2xx' })}>Requests moved off their provider</button>
      <button class="secondary" onClick=${() => navigate('logs', { added_fallback: 'true' })}>Served by an added fallback</button></p>`
  }
  if (name === 'failed') {
    return html`<dl class="facts">
      ${row('Served', requests.served)}${row('Failed (not counting request errors and cancels)', requests.failed)}${row('Kept on a failing provider because re-routing was off', requests.failed_avoidable)}${row('Checks of held keys', requests.checks)}
    </dl><p><button class="secondary" onClick=${() => navigate('logs', { log_status: '5xx' })}>Failed requests in the log</button></p>`
  }
  return html`<dl class="facts">
    ${row('Provider picked by routing', requests.routing_picked)}${row('Provider named by the caller (app, rule or pin)', requests.caller_named)}${row('Share picked by routing', percent(requests.routing_picked_share))}
  </dl><p class="muted">For requests that named their provider, routing picked only the key.</p>`
}
