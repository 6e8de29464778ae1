// One request of the log, whole (GET /api/logs/:id): its routing summary in words, its attempts,
// the routing-log lines, and a link to its moment in routing history.
import { html } from '../lib/html.js'
import { useApi } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { reasonLabel, stamp } from '../lib/format.js'
import { historyParams, routingSentences } from '../lib/logs.js'
import { Sheet } from './sheet.js'
import { Card, ErrorNotice } from './notice.js'

/**
 * One request whole, in a side sheet.
 * @param {{ id: string, context: import('../lib/page').PageContext, onClose: () => void, onPrevious?: (() => void) | null | undefined, onNext?: (() => void) | null | undefined }} props
 */
export function LogDetail({ id, onClose, onPrevious, onNext }) {
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').LogEntry>} */
  const entry = useApi(`/api/logs/${encodeURIComponent(id)}`, [id])
  const data = entry.data
  const toHistory = () => data?.history && navigate('dashboard', historyParams(data.history))
  return html`<${Sheet} title="Request" testid="log-detail" onClose=${onClose} onPrevious=${onPrevious} onNext=${onNext}>
    <${ErrorNotice} error=${entry.error} what="This request" />
    ${data ? html`
      <${Card} title="Adaptive routing" testid="routing-summary"
        actions=${data.history ? html`<button class="secondary" onClick=${toHistory}>View in routing history</button>` : null}>
        ${routingSentences(data).map((line) => html`<p>${line}</p>`)}
      </${Card}>
      <${Card} title="Request">
        <dl class="facts">
          <dt>Id</dt><dd class="mono">${data.id}</dd>
          <dt>At</dt><dd>${stamp(data.at)} on ${data.node_id} (${data.region})</dd>
          <dt>Status</dt><dd>${data.status}${data.failure_class ? ` · ${data.failure_class}` : ''}</dd>
          <dt>Latency</dt><dd>${data.latency_ms} ms${data.ttft_ms !== null ? ` · first token ${data.ttft_ms} ms` : ''}${data.stream ? ' · stream' : ''}</dd>
          <dt>Tokens</dt><dd>${data.usage ? `${data.usage.prompt_tokens} in, ${data.usage.completion_tokens} out` : '—'}</dd>
          <dt>Fallbacks sent</dt><dd>${data.requested.fallbacks.length === 0 ? 'none' : data.requested.fallbacks.join(', ')}</dd>
          <dt>Session</dt><dd>${data.requested.session_id ?? 'none'}</dd>
        </dl>
      </${Card}>
      <${Card} title=${`Attempts (${data.attempts.length})`}>
        <table class="table"><thead><tr><th>Provider / model</th><th>Key</th><th>Status</th><th>Failure</th><th class="num">Latency</th></tr></thead>
          <tbody>${data.attempts.map((attempt, at) => html`<tr key=${at}><td>${attempt.provider}/${attempt.model}</td><td>${attempt.key_name}</td><td>${attempt.status}</td><td>${attempt.failure_class ? reasonLabel(attempt.failure_class) : '—'}</td><td class="num">${attempt.latency_ms} ms</td></tr>`)}</tbody>
        </table>
      </${Card}>
      <${Card} title="Routing log">
        ${data.routing.log.length === 0 ? html`<p class="empty">No routing-log lines.</p>` : html`<ol class="events">${data.routing.log.map((line, at) => html`<li key=${at} style="display:block">${line}</li>`)}</ol>`}
      </${Card}>` : null}
  </${Sheet}>`
}
