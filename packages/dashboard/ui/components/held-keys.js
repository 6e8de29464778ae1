// The Held Keys card (reference: "Releasing held keys"): every hold with its provider, model,
// status (held until its next check, or its check due), reason, the provider's own words, held
// since, next check and checks so far; Release returns one key (or one model of it), Release
// all returns every held key, on every node.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { dueIn, duration, reasonLabel, relative, stamp } from '../lib/format.js'
import { Card } from './notice.js'
import { can } from '../lib/session.js'

/**
 * Where a hold stands, from the conditions API's own fields: `held` until its next check
 * (`next_check_at` ahead), `due` once that time has passed (this node lets the check through
 * with the next request the key could serve), with the rung and the checks made so far.
 */
export function holdStatus(hold, now) {
  const rung = `ladder rung ${hold.rung}`
  const checks = hold.checks === 0 ? 'no check yet' : `${hold.checks} check${hold.checks === 1 ? '' : 's'} so far`
  const wait = (Date.parse(hold.next_check_at) - now) / 1000
  if (wait >= 1) return { status: 'held', label: 'Held', detail: `${rung}, ${checks}; next check in ${duration(wait)}` }
  return { status: 'due', label: 'Check due', detail: `${rung}, ${checks}; the next request this key could serve carries the check` }
}

export function HeldKeysCard({ conditions, session, now, onReleased }) {
  const [busy, setBusy] = useState(null)
  const [message, setMessage] = useState(null)
  const canRelease = can(session, 'adaptive_routing')
  const release = async (label, body) => {
    setBusy(label)
    setMessage(null)
    try {
      const answer = await api('POST', '/api/adaptive-routing/conditions/clear', body)
      setMessage({ kind: 'ok', text: answer.count === 0 ? 'Nothing named was held any more.' : `Released ${answer.count} hold${answer.count === 1 ? '' : 's'} on every node.` })
      onReleased()
    } catch (error) {
      setMessage({ kind: 'error', text: error.message })
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
              const label = `${hold.provider}:${hold.key_id}:${hold.model ?? '*'}`
              const body = hold.model === null ? { provider: hold.provider, key_id: hold.key_id } : { provider: hold.provider, key_id: hold.key_id, model: hold.model }
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
