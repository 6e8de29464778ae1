// The Held Keys card (reference: "Releasing held keys"): every hold with its provider, model,
// status (held until its next check, or its check due), reason, the provider's own words, held
// since, next check and checks so far; Release returns one key (or one model of it), Release
// all returns every held key, on every node.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { errorText } from '../lib/http.js'
import { dueIn, reasonLabel, relative, stamp } from '../lib/format.js'
import { holdLabel, holdStatus, releaseBody, releasedText } from '../lib/holds.js'
import { Card } from './notice.js'
import { can } from '../lib/session.js'

/** @typedef {{ kind: 'ok' | 'error', text: string }} Message */

/**
 * The held keys of the fleet with their status, and Release / Release all.
 * @param {{ conditions: import('../lib/answers').ConditionsAnswer | undefined, session: import('../lib/page').Session, now: number, onReleased: () => void }} props
 */
export function HeldKeysCard({ conditions, session, now, onReleased }) {
  const [busy, setBusy] = useState(/** @type {string | null} */ (null))
  const [message, setMessage] = useState(/** @type {Message | null} */ (null))
  const canRelease = can(session, 'adaptive_routing')
  const release = async (/** @type {string} */ label, /** @type {object} */ body) => {
    setBusy(label)
    setMessage(null)
    try {
      const answer = /** @type {{ count: number }} */ (await api('POST', '/api/adaptive-routing/conditions/clear', body))
      setMessage({ kind: 'ok', text: releasedText(answer.count) })
      onReleased()
    } catch (error) {
      setMessage({ kind: 'error', text: errorText(error) })
    } finally {
      setBusy(null)
    }
  }
  const holds = conditions?.conditions ?? []
  const denied = canRelease ? undefined : 'Releasing needs an Update token'
  const actions = html`<button class="secondary" disabled=${!canRelease || holds.length === 0 || busy !== null} title=${denied}
      onClick=${() => release('all', {})}>Release all</button>`
  return html`<${Card} title=${`Held keys${conditions ? ` (${conditions.count})` : ''}`} actions=${actions} testid="held-keys" className="held-keys" busy=${conditions === undefined}>
    ${message ? html`<div class=${`notice ${message.kind}`} role="status">${message.text}</div>` : null}
    ${conditions === undefined ? html`<p class="empty">Loading the held keys…</p>` : holds.length === 0
      ? html`<p class="empty">No key is held. Every key the providers accept is in rotation.</p>`
      : html`<table class="table">
          <thead><tr><th>Provider</th><th>Key</th><th>Model</th><th>Status</th><th>Reason</th><th>Provider's words</th><th>Held since</th><th>Next check</th><th>Checks</th><th></th></tr></thead>
          <tbody>
            ${holds.map((hold) => {
              const label = holdLabel(hold)
              const body = releaseBody(hold)
              const status = holdStatus(hold, now)
              return html`<tr key=${label} data-testid="held-key" data-key=${hold.key_name ?? hold.key_id} data-status=${status.status}>
                <td>${hold.provider}</td>
                <td><strong>${hold.key_name ?? hold.key_id}</strong><div class="muted mono">${hold.key_id}</div></td>
                <td>${hold.model ?? html`<span class="muted">every model</span>`}</td>
                <td data-testid="hold-status" title=${status.detail}><span class="badge state-failed held">${status.label}</span></td>
                <td><span class="badge state-failed held" title=${`Held: ${reasonLabel(hold.reason)}`}>${reasonLabel(hold.reason)}</span></td>
                <td class="quote">“${hold.message}”</td>
                <td title=${stamp(hold.since)}>${relative(hold.since, now)}</td>
                <td title=${stamp(hold.next_check_at)} data-testid="next-check">${dueIn(hold.next_check_at, now)}</td>
                <td class="num">${hold.checks}</td>
                <td><button disabled=${!canRelease || busy !== null} title=${denied ?? 'Return this key to rotation now; the provider is asked again with live traffic'}
                  onClick=${() => release(label, body)}>${busy === label ? 'Releasing…' : 'Release'}</button></td>
              </tr>`
            })}
          </tbody>
        </table>`}
  </${Card}>`
}
