// One incident whole (GET .../history/issues/:id): the held key card quoting the provider, what
// to do, next check, events in order, recent changes, settings in effect, impacted nodes, what
// would help; "Open provider" and "Release key".
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api, useApi, withQuery } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { duration, labelOf, plural, reasonLabel, relative, stamp, stateLabel, STATUS_LABELS } from '../lib/format.js'
import { HOLD_REASONS, incidentReasons, incidentWhere } from '../lib/incidents.js'
import { holdsOnKeys } from '../lib/holds.js'
import { errorText } from '../lib/http.js'
import { SWITCHES, switchValue } from '../lib/settings.js'
import { Sheet } from './sheet.js'
import { Card, ErrorNotice } from './notice.js'
import { EventList } from './events.js'
import { can } from '../lib/session.js'

/**
 * One incident whole, in a side sheet.
 * @param {{ id: string, context: import('../lib/page').PageContext, onClose: () => void, onPrevious?: (() => void) | null, onNext?: (() => void) | null }} props
 */
export function IncidentDetail({ id, context, onClose, onPrevious, onNext }) {
  const { window } = context
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').IncidentDetailAnswer>} */
  const detail = useApi(withQuery(`/api/adaptive-routing/history/issues/${encodeURIComponent(id)}`, { from: window.from, to: window.to }), [id, context.version])
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').ConditionsAnswer>} */
  const conditions = useApi('/api/adaptive-routing/conditions', [id, context.tick, context.version])
  const [message, setMessage] = useState(/** @type {{ kind: 'ok' | 'error', text: string } | null} */ (null))
  const data = detail.data
  const canRelease = can(context.session, 'adaptive_routing')
  const keyName = (/** @type {string} */ keyId) => data?.key_names?.[keyId] ?? keyId
  const holds = data ? holdsOnKeys(conditions.data?.conditions, data.provider, data.key_ids) : []
  const release = async () => {
    if (!data) return
    setMessage(null)
    try {
      let released = 0
      for (const keyId of data.key_ids) released += /** @type {{ count: number }} */ (await api('POST', '/api/adaptive-routing/conditions/clear', { provider: data.provider, key_id: keyId })).count
      setMessage({ kind: 'ok', text: released === 0 ? 'The key was not held any more.' : 'Released on every node; routing checks the key with the next request.' })
      context.reload()
    } catch (error) {
      setMessage({ kind: 'error', text: errorText(error) })
    }
  }
  return html`<${Sheet} title="Incident" testid="incident-detail" onClose=${onClose} onPrevious=${onPrevious} onNext=${onNext}>
    <${ErrorNotice} error=${detail.error} what="This incident" />
    ${message ? html`<div class=${`notice ${message.kind}`} role="status">${message.text}</div>` : null}
    ${data ? html`
      <${Card} title=${incidentWhere(data, keyName)}
        actions=${html`<button class="secondary" onClick=${() => navigate('providers', {}, data.provider)}>Open provider</button>
          ${data.key_ids.length > 0 ? html`<button disabled=${!canRelease || holds.length === 0} title=${canRelease ? (holds.length === 0 ? 'The key is not held now' : 'Release the hold on every node; the next request checks the key') : 'Releasing needs an Update token'} onClick=${release}>Release key</button>` : null}`}>
        <p><span class=${`tag${data.status === 'attention' ? ' attention' : ''}`} data-testid="incident-status">${labelOf(STATUS_LABELS, data.status)}</span>
          ${' '}${incidentReasons(data)} · opened ${stamp(data.opened_at)} · ${data.closed_at ? `lasted ${duration(data.duration_seconds)}` : `ongoing for ${duration(data.duration_seconds)}`}</p>
        <dl class="facts">
          <dt>Worst state</dt><dd>${stateLabel(data.worst_state)}</dd>
          <dt>Checks</dt><dd>${data.checks}${data.checks_list.length ? `: ${data.checks_list.map((check) => check.outcome.replace('_', ' ')).join(', ')}` : ''}</dd>
          <dt>Failed requests</dt><dd>${data.requests_failed}${data.failed_requests.length ? ` (${data.failed_requests.map((failed) => (failed.pinned ? 'named the provider' : 'routed')).join(', ')})` : ''}</dd>
          <dt>Nodes</dt><dd>${data.nodes.join(', ')} in ${data.regions.join(', ')}</dd>
        </dl>
      </${Card}>
      ${data.reasons.some((reason) => HOLD_REASONS.includes(reason)) ? html`<${Card} title="Held key" testid="held-key-card">
        ${data.provider_message ? html`<p class="quote">${data.provider} said: “${data.provider_message}”</p>` : null}
        ${holds.length > 0 ? holds.map((hold) => html`<p key=${hold.key_id + (hold.model ?? '')}>${hold.key_name ?? hold.key_id} is held (${reasonLabel(hold.reason)}) since ${stamp(hold.since)}; next check ${relative(hold.next_check_at, context.now)} (${stamp(hold.next_check_at)}), ${plural(hold.checks, 'check')} so far.</p>`)
          : html`<p class="muted">The key is not held now.</p>`}
      </${Card}>` : null}
      ${data.what_would_help ? html`<${Card} title="What would help" testid="what-would-help"><p>${data.what_would_help}</p></${Card}>` : null}
      <${Card} title="Events"><${EventList} events=${data.events} keyName=${keyName} testid="incident-events" /></${Card}>
      <${Card} title="Recent changes"><${EventList} events=${data.recent_changes} keyName=${keyName} testid="recent-changes" /></${Card}>
      <${Card} title="Settings in effect">
        <table class="table"><thead><tr><th>Switch</th><th>When it opened</th><th>Now</th></tr></thead>
          <tbody>${SWITCHES.map(([field, label]) => html`<tr key=${field}><td>${label}</td><td>${switchValue(data.settings_in_effect.at_open[field])}</td><td>${switchValue(data.settings_in_effect.now[field])}</td></tr>`)}</tbody></table>
      </${Card}>
      <${Card} title="Impacted nodes">
        <table class="table"><thead><tr><th>Node</th><th>Region</th><th></th></tr></thead>
          <tbody>${data.impacted_nodes.map((node) => html`<tr key=${node.node_id}><td>${node.node_id}</td><td>${node.region}</td>
            <td>${node.saw_refusal ? 'saw it itself' : 'held the key only because another node saw the refusal'}</td></tr>`)}</tbody></table>
      </${Card}>` : html`<p class="muted">Loading…</p>`}
  </${Sheet}>`
}
