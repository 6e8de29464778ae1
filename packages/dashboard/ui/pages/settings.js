// Settings: the five switches of adaptive routing, each with what it does in one line
// (reference: "Configuration"), then the history and request-log settings when this node has
// them. A PUT replaces all five switches, so every change sends all five; it reaches every node.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api, useApi } from '../lib/api.js'
import { Card, ErrorNotice } from '../components/notice.js'
import { can } from '../lib/session.js'

export const SWITCHES = [
  ['direction_selection_enabled', 'Provider selection', 'Routing picks the provider for each model by score. Off: a request keeps the provider and fallbacks it came with.'],
  ['route_selection_enabled', 'Key selection', 'Routing weighs each key by its errors, latency and load. Off: keys are picked by their static weights (held keys are still skipped).'],
  ['append_fallbacks_to_pinned', 'Append fallbacks to pinned requests', 'A request that names its provider still gets the healthy providers for its model as fallbacks behind its own.'],
  ['reroute_failed_directions', 'Re-route failed providers', 'A request that names a provider that is failing for its model is sent to a healthy provider for the same model instead.'],
  ['prune_failed_fallbacks', 'Prune failed fallbacks', 'Providers failing for the model are dropped from a request’s own fallback list.'],
]

const FIVE = SWITCHES.map(([field]) => field)

/** The settings beside the five that the config API may report (history, request log). */
const EXTRA = {
  history_enabled: ['Record routing history', 'Every node records what routing saw and did (states, holds, checks, releases, snapshots, request counts) for the dashboard and incidents.'],
  history_retention_days: ['History kept for (days)', 'The cluster’s leader drops whole days of history older than this, once a day.'],
}

export function SettingsPage({ context }) {
  const config = useApi('/api/adaptive-routing/config', [context.version])
  const [saving, setSaving] = useState(null)
  const [message, setMessage] = useState(null)
  const canChange = can(context.session, 'adaptive_routing')
  // A PUT replaces the five switches, so it always sends all five as they are, plus the one changed
  // (a setting beyond the five is changed only when it is sent).
  const save = async (field, value) => {
    setSaving(field)
    setMessage(null)
    const body = { ...Object.fromEntries(FIVE.map((name) => [name, config.data[name] === true])), [field]: value }
    try {
      const answer = await api('PUT', '/api/adaptive-routing/config', body)
      setMessage({ kind: 'ok', text: answer.pending ? 'Applied on every node; saving to Postgres is still under way.' : 'Saved. It applies on every node now.' })
      context.reload()
    } catch (error) {
      setMessage({ kind: 'error', text: error.message })
    } finally {
      setSaving(null)
    }
  }
  const extra = config.data ? Object.entries(config.data).filter(([name]) => !FIVE.includes(name) && name !== 'pending') : []
  return html`<div class="page settings">
    <${ErrorNotice} error=${config.error} what="Settings" />
    ${message ? html`<div class=${`notice ${message.kind}`} role="status">${message.text}</div>` : null}
    <${Card} title="Adaptive routing" testid="switches">
      <p class="muted">Scoring, thresholds and hold waits are pre-tuned. These five switches decide how far routing may go; a change applies live, on every node.</p>
      ${config.data
        ? html`<ul class="switches">
            ${SWITCHES.map(([field, label, explanation]) => html`<li key=${field}>
              <label class="switch">
                <input type="checkbox" role="switch" name=${field} checked=${config.data[field] === true}
                  disabled=${!canChange || saving !== null} title=${canChange ? undefined : 'Changing settings needs an Update token'}
                  onChange=${(event) => save(field, event.currentTarget.checked)} />
                <span class="switch-label">${label}</span>
                <code class="muted">${field}</code>
              </label>
              <p class="explain">${explanation}</p>
            </li>`)}
          </ul>`
        : html`<p class="empty">Loading…</p>`}
    </${Card}>
    <${Card} title="History and request log" testid="recording">
      ${extra.length === 0
        ? html`<p class="muted">This node reports no history or request-log settings (<code>GET /api/adaptive-routing/config</code> has only the five switches).</p>`
        : html`<ul class="switches">${extra.map(([name, value]) => html`<li key=${name}>
            ${typeof value === 'boolean'
              ? html`<label class="switch"><input type="checkbox" role="switch" name=${name} checked=${value} disabled=${!canChange || saving !== null}
                  onChange=${(event) => save(name, event.currentTarget.checked)} /><span class="switch-label">${EXTRA[name]?.[0] ?? name}</span><code class="muted">${name}</code></label>`
              : typeof value === 'number'
                ? html`<label class="switch"><input type="number" name=${name} value=${value} min="1" max="365" disabled=${!canChange || saving !== null} style="width: 80px"
                    onChange=${(event) => save(name, Number(event.currentTarget.value))} /><span class="switch-label">${EXTRA[name]?.[0] ?? name}</span><code class="muted">${name}</code></label>`
                : html`<label class="switch"><span class="switch-label">${EXTRA[name]?.[0] ?? name}</span><code>${JSON.stringify(value)}</code></label>`}
            ${EXTRA[name] ? html`<p class="explain">${EXTRA[name][1]}</p>` : null}
          </li>`)}</ul>`}
    </${Card}>
  </div>`
}
