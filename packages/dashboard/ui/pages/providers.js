// Providers: the list, add, edit and delete, through /api/providers. Key values are shown as
// the API sends them (redacted); a redacted value left as it is keeps the stored key, so an
// edit never needs the secret again.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api, useApi } from '../lib/api.js'
import { Card, ErrorNotice } from '../components/notice.js'
import { ProviderForm } from '../components/provider-form.js'
import { can } from '../lib/session.js'
import { errorText } from '../lib/http.js'

/**
 * The Providers page.
 * @param {{ context: import('../lib/page').PageContext }} props
 */
export function ProvidersPage({ context }) {
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').ProvidersAnswer>} */
  const list = useApi('/api/providers', [context.version])
  const [editing, setEditing] = useState(/** @type {import('../lib/answers').ProviderEntry | 'new' | null} */ (null))
  const [confirming, setConfirming] = useState(/** @type {string | null} */ (null))
  const [message, setMessage] = useState(/** @type {{ kind: 'ok' | 'error', text: string } | null} */ (null))
  const canChange = can(context.session, 'providers')
  const denied = canChange ? undefined : 'Changing providers needs an Update token'
  const remove = async (/** @type {string} */ name) => {
    setConfirming(null)
    try {
      await api('DELETE', `/api/providers/${encodeURIComponent(name)}`)
      setMessage({ kind: 'ok', text: `Deleted ${name} on every node; its holds and metrics are gone.` })
      context.reload()
    } catch (error) {
      setMessage({ kind: 'error', text: errorText(error) })
    }
  }
  const saved = (/** @type {string} */ text) => {
    setEditing(null)
    setMessage({ kind: 'ok', text })
    context.reload()
  }
  const providers = list.data?.providers ?? []
  const focus = context.route.id
  return html`<div class="page providers">
    <${ErrorNotice} error=${list.error} what="Providers" />
    ${message ? html`<div class=${`notice ${message.kind}`} role="status">${message.text}</div>` : null}
    ${editing ? html`<${ProviderForm} original=${editing === 'new' ? null : editing} onSaved=${saved} onCancel=${() => setEditing(null)} />` : null}
    <${Card} title=${`Providers (${providers.length})`} testid="providers"
      actions=${html`<button disabled=${!canChange || editing !== null} title=${denied} onClick=${() => setEditing('new')}>Add provider</button>`}>
      ${providers.length === 0 ? html`<p class="empty">No provider is configured.</p>` : null}
      ${providers.map((provider) => html`<article key=${provider.name} class=${`provider${focus === provider.name ? ' focus' : ''}`} data-testid="provider" data-name=${provider.name}>
        <header>
          <h3>${provider.name} <span class="tag">${provider.type}</span></h3>
          <span class="muted small">${provider.network_config?.base_url ?? 'provider’s own endpoint'}</span>
          <span class="spacer"></span>
          <button class="secondary" disabled=${!canChange || editing !== null} title=${denied} onClick=${() => setEditing(provider)}>Edit</button>
          ${confirming === provider.name
            ? html`<button class="danger" onClick=${() => remove(provider.name)}>Delete ${provider.name} and its keys</button>
                <button class="secondary" onClick=${() => setConfirming(null)}>Keep it</button>`
            : html`<button class="danger secondary" disabled=${!canChange} title=${denied} onClick=${() => setConfirming(provider.name)}>Delete</button>`}
        </header>
        <table class="table">
          <thead><tr><th>Key</th><th>Id</th><th>Value</th><th>Models</th><th class="num">Weight</th></tr></thead>
          <tbody>${provider.keys.map((key) => html`<tr key=${key.id ?? key.name} data-testid="provider-key">
            <td><strong>${key.name}</strong></td><td class="mono muted small">${key.id}</td>
            <td class="mono">${key.value}</td><td>${key.models.join(', ')}</td><td class="num">${key.weight}</td>
          </tr>`)}</tbody>
        </table>
      </article>`)}
    </${Card}>
  </div>`
}
