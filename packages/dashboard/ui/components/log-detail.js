// One request of the log, whole (GET /api/logs/:id): its routing summary in words, its attempts,
// the routing-log lines, and a link to its moment in routing history.
import { html } from '../lib/html.js'
import { useApi } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { localInput, reasonLabel, stamp } from '../lib/format.js'
import { Sheet } from './sheet.js'
import { Card, ErrorNotice } from './notice.js'

const CHECK_OUTCOMES = { served: 'the key served, so its hold was released', refused_again: 'the provider refused it again, so it stays held', inconclusive: 'the answer said nothing about the key, so it stays held on the same rung', not_sent: 'the check was not sent' }

/** The routing summary of one request as sentences, from its fields as the API gives them. */
export function routingSentences(entry) {
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
  if (routing.check) lines.push(`It was the check of held key ${routing.check.key_name} on ${routing.check.provider}/${routing.check.model}: ${CHECK_OUTCOMES[routing.check.outcome] ?? routing.check.outcome}.`)
  if (routing.added_fallback_served) lines.push('A fallback that routing added (not one the request sent) served it.')
  if (routing.session_kept === true) lines.push('Its session kept it on the provider and key it had before.')
  if (routing.session_kept === false) lines.push('Its session had another provider or key, which was failing or held, so it moved.')
  return lines
}

export function LogDetail({ id, context, onClose, onPrevious, onNext }) {
  const entry = useApi(`/api/logs/${encodeURIComponent(id)}`, [id])
  const data = entry.data
  const toHistory = () => navigate('dashboard', { window: 'custom', from: localInput(data.history.from), to: localInput(data.history.to), live: null, entities: data.history.entities.join(',') })
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
