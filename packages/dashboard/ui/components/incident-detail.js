// One incident whole (GET .../history/issues/:id): the held key card quoting the provider, what
// to do, next check, events in order, recent changes, settings in effect, impacted nodes, what
// would help; "Open provider" and "Release key".
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api, useApi, withQuery } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { duration, reasonLabel, relative, stamp, STATE_LABELS } from '../lib/format.js'
import { Sheet } from './sheet.js'
import { Card, ErrorNotice } from './notice.js'
import { EventList } from './events.js'
import { SWITCHES } from '../pages/settings.js'
import { can } from '../lib/session.js'

export const STATUS_LABELS = { attention: 'Needs attention', recovering: 'Recovering', mitigated: 'Mitigated', waiting: 'Waiting for traffic', resolved: 'Resolved', unobserved: 'No longer observed' }
const HOLD_REASONS = ['credential', 'quota', 'model_access', 'model_gone', 'region_blocked', 'rate_limit']

export function IncidentDetail({ id, context, onClose, onPrevious, onNext }) {
  const { window } = context
  const detail = useApi(withQuery(`/api/adaptive-routing/history/issues/${encodeURIComponent(id)}`, { from: window.from, to: window.to }), [id, context.version])
  const conditions = useApi('/api/adaptive-routing/conditions', [id, context.tick, context.version])
  const [message, setMessage] = useState(null)
  const data = detail.data
  const canRelease = can(context.session, 'adaptive_routing')
  const keyName = (keyId) => data?.key_names?.[keyId] ?? keyId
  const holds = data ? (conditions.data?.conditions ?? []).filter((hold) => hold.provider === data.provider && data.key_ids.includes(hold.key_id)) : []
  const release = async () => {
    setMessage(null)
    try {
      let released = 0
      for (const keyId of data.key_ids) released += (await api('POST', '/api/adaptive-routing/conditions/clear', { provider: data.provider, key_id: keyId })).count
      setMessage({ kind: 'ok', text: released === 0 ? 'The key was not held any more.' : 'Released on every node; routing checks the key with the next request.' })
      context.reload()
    } catch (error) {
      setMessage({ kind: 'error', text: error.message })
    }
  }
  return html`<${Sheet} title="Incident" testid="incident-detail" onClose=${onClose} onPrevious=${onPrevious} onNext=${onNext}>
    <${ErrorNotice} error=${detail.error} what="This incident" />
    ${message ? html`<div class=${`notice ${message.kind}`} role="status">${message.text}</div>` : null}
    ${data ? html`
      <${Card} title=${`${data.provider} · ${data.models.join(', ') || 'every model'}${data.key_ids.length ? ` · ${data.key_ids.map(keyName).join(', ')}` : ''}`}
        actions=${html`<button class="secondary" onClick=${() => navigate('providers', {}, data.provider)}>Open provider</button>
          ${data.key_ids.length > 0 ? html`<button disabled=${!canRelease || holds.length === 0} title=${canRelease ? (holds.length === 0 ? 'The key is not held now' : 'Release the hold on every node; the next request checks the key') : 'Releasing needs an Update token'} onClick=${release}>Release key</button>` : null}`}>
        <p><span class=${`tag${data.status === 'attention' ? ' attention' : ''}`} data-testid="incident-status">${STATUS_LABELS[data.status] ?? data.status}</span>
          ${' '}${data.reasons.map(reasonLabel).join(', ') || STATE_LABELS[data.worst_state]} · opened ${stamp(data.opened_at)} · ${data.closed_at ? `lasted ${duration(data.duration_seconds)}` : `ongoing for ${duration(data.duration_seconds)}`}</p>
        <dl class="facts">
          <dt>Worst state</dt><dd>${STATE_LABELS[data.worst_state]}</dd>
          <dt>Checks</dt><dd>${data.checks}${data.checks_list.length ? `: ${data.checks_list.map((check) => check.outcome.replace('_', ' ')).join(', ')}` : ''}</dd>
          <dt>Failed requests</dt><dd>${data.requests_failed}${data.failed_requests.length ? ` (${data.failed_requests.map((failed) => (failed.pinned ? 'named the provider' : 'routed')).join(', ')})` : ''}</dd>
          <dt>Nodes</dt><dd>${data.nodes.join(', ')} in ${data.regions.join(', ')}</dd>
        </dl>
      </${Card}>
      ${data.reasons.some((reason) => HOLD_REASONS.includes(reason)) ? html`<${Card} title="Held key" testid="held-key-card">
        ${data.provider_message ? html`<p class="quote">${data.provider} said: “${data.provider_message}”</p>` : null}
        ${holds.length > 0 ? holds.map((hold) => html`<p key=${hold.key_id + (hold.model ?? '')}>${hold.key_name ?? hold.key_id} is held (${reasonLabel(hold.reason)}) since ${stamp(hold.since)}; next check ${relative(hold.next_check_at, context.now)} (${stamp(hold.next_check_at)}), ${hold.checks} check${hold.checks === 1 ? '' : 's'} so far.</p>`)
          : html`<p class="muted">The key is not held now.</p>`}
      </${Card}>` : null}
      ${data.what_would_help ? html`<${Card} title="What would help" testid="what-would-help"><p>${data.what_would_help}</p></${Card}>` : null}
      <${Card} title="Events"><${EventList} events=${data.events} keyName=${keyName} testid="incident-events" /></${Card}>
      <${Card} title="Recent changes"><${EventList} events=${data.recent_changes} keyName=${keyName} testid="recent-changes" /></${Card}>
      <${Card} title="Settings in effect">
        <table class="table"><thead><tr><th>Switch</th><th>When it opened</th><th>Now</th></tr></thead>
          <tbody>${SWITCHES.map(([field, label]) => html`<tr key=${field}><td>${label}</td><td>${onOff(data.settings_in_effect.at_open[field])}</td><td>${onOff(data.settings_in_effect.now[field])}</td></tr>`)}</tbody></table>
      </${Card}>
      <${Card} title="Impacted nodes">
        <table class="table"><thead><tr><th>Node</th><th>Region</th><th></th></tr></thead>
          <tbody>${data.impacted_nodes.map((node) => html`<tr key=${node.node_id}><td>${node.node_id}</td><td>${node.region}</td>
            <td>${node.saw_refusal ? 'saw it itself' : 'held the key only because another node saw the refusal'}</td></tr>`)}</tbody></table>
      </${Card}>` : html`<p class="muted">Loading…</p>`}
  </${Sheet}>`
}

const onOff = (value) => (value === true ? 'on' : value === false ? 'off' : '—')
