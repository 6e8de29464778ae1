// Settings: the five switches of adaptive routing, each with what it does in one line
// (reference: "Configuration"), then the history and request-log settings when this node has
// them. A PUT replaces all five switches, so every change sends all five; it reaches every node.
import { useState } from 'preact/hooks'
import { html, inputChecked, inputValue } from '../lib/html.js'
import { api, useApi } from '../lib/api.js'
import { Card, ErrorNotice } from '../components/notice.js'
import { can } from '../lib/session.js'
import { errorText } from '../lib/http.js'
import { EXTRA_SETTINGS, extraSettings, settingsBody, SWITCHES } from '../lib/settings.js'

/**
 * The Settings page.
 * @param {{ context: import('../lib/page').PageContext }} props
 */
export function SettingsPage({ context }) {
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').ConfigAnswer>} */
  const config = useApi('/api/adaptive-routing/config', [context.version])
  const [saving, setSaving] = useState(/** @type {string | null} */ (null))
  const [message, setMessage] = useState(/** @type {{ kind: 'ok' | 'error', text: string } | null} */ (null))
  const canChange = can(context.session, 'adaptive_routing')
  // A PUT replaces the five switches, so it always sends all five as they are, plus the one changed
  // (a setting beyond the five is changed only when it is sent).
  const save = async (/** @type {string} */ field, /** @type {unknown} */ value) => {
    if (!config.data) return
    setSaving(field)
    setMessage(null)
    const body = settingsBody(config.data, field, value)
    try {
      const answer = /** @type {{ pending?: boolean }} */ (await api('PUT', '/api/adaptive-routing/config', body))
      setMessage({ kind: 'ok', text: answer.pending ? 'Applied on every node; saving to Postgres is still under way.' : 'Saved. It applies on every node now.' })
      context.reload()
    } catch (error) {
      setMessage({ kind: 'error', text: errorText(error) })
    } finally {
      setSaving(null)
    }
  }
  const data = config.data
  const extra = extraSettings(data)
  return html`<div class="page settings">
    <${ErrorNotice} error=${config.error} what="Settings" />
    ${message ? html`<div class=${`notice ${message.kind}`} role="status">${message.text}</div>` : null}
    <${Card} title="Adaptive routing" testid="switches">
      <p class="muted">Scoring, thresholds and hold waits are pre-tuned. These five switches decide how far routing may go; a change applies live, on every node.</p>
      ${data
        ? html`<ul class="switches">
            ${SWITCHES.map(([field, label, explanation]) => html`<li key=${field}>
              <label class="switch">
                <input type="checkbox" role="switch" name=${field} checked=${data[field] === true}
                  disabled=${!canChange || saving !== null} title=${canChange ? undefined : 'Changing settings needs an Update token'}
                  onChange=${(/** @type {Event} */ event) => save(field, inputChecked(event))} />
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
                  onChange=${(/** @type {Event} */ event) => save(name, inputChecked(event))} /><span class="switch-label">${EXTRA_SETTINGS[name]?.[0] ?? name}</span><code class="muted">${name}</code></label>`
              : typeof value === 'number'
                ? html`<label class="switch"><input type="number" name=${name} value=${value} min="1" max="365" disabled=${!canChange || saving !== null} style="width: 80px"
                    onChange=${(/** @type {Event} */ event) => save(name, Number(inputValue(event)))} /><span class="switch-label">${EXTRA_SETTINGS[name]?.[0] ?? name}</span><code class="muted">${name}</code></label>`
                : html`<label class="switch"><span class="switch-label">${EXTRA_SETTINGS[name]?.[0] ?? name}</span><code>${JSON.stringify(value)}</code></label>`}
            ${EXTRA_SETTINGS[name] ? html`<p class="explain">${EXTRA_SETTINGS[name][1]}</p>` : null}
          </li>`)}</ul>`}
    </${Card}>
  </div>`
}
