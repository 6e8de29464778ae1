// Adds or edits one provider. The body is config.json's providers.<name> object; fields the
// form does not show (aliases, azure_key_config, other network settings) are sent back as
// they came, so an edit changes only what was edited.
import { useState } from 'preact/hooks'
import { html, inputChecked, inputValue } from '../lib/html.js'
import { api } from '../lib/api.js'
import { errorText } from '../lib/http.js'
import { blankKey, formKeys, isCompatible, NATIVE_PROVIDERS, providerBody } from '../lib/providers.js'
import { Card } from './notice.js'

/** @typedef {import('../lib/providers.js').FormKey} FormKey */

/**
 * The form that adds a provider (original null) or edits one.
 * @param {{ original: import('../lib/answers').ProviderEntry | null, onSaved: (text: string) => void, onCancel: () => void }} props
 */
export function ProviderForm({ original, onSaved, onCancel }) {
  const [name, setName] = useState(original?.name ?? '')
  const [compatible, setCompatible] = useState(original ? original.custom_provider_config !== undefined : false)
  const [baseUrl, setBaseUrl] = useState(original?.network_config?.base_url ?? '')
  const [keys, setKeys] = useState(() => formKeys(original))
  const [error, setError] = useState(/** @type {string | null} */ (null))
  const [saving, setSaving] = useState(false)
  const setKey = (/** @type {number} */ index, /** @type {keyof FormKey} */ field, /** @type {string} */ value) => setKeys(keys.map((key, at) => (at === index ? { ...key, [field]: value } : key)))
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault()
    setSaving(true)
    setError(null)
    const body = providerBody({ original, name, compatible, baseUrl, keys })
    try {
      if (original) await api('PUT', `/api/providers/${encodeURIComponent(original.name)}`, body)
      else await api('POST', '/api/providers', body)
      onSaved(original ? `Saved ${original.name}. Every node uses it now; an edited key's holds are released.` : `Added ${name.trim()} on every node.`)
    } catch (failure) {
      setError(errorText(failure))
    } finally {
      setSaving(false)
    }
  }
  return html`<${Card} title=${original ? `Edit ${original.name}` : 'Add a provider'} testid="provider-form" className="form-card">
    <form onSubmit=${submit}>
      ${error ? html`<div class="notice error" role="alert">${error}</div>` : null}
      <div class="row">
        <label>Name <input name="name" value=${name} disabled=${original !== null} required placeholder="openai, azure, anthropic, groq…"
          onInput=${(/** @type {Event} */ event) => setName(inputValue(event))} /></label>
        <label class="inline"><input type="checkbox" name="compatible" checked=${isCompatible({ original, name, compatible })}
          disabled=${original !== null || !NATIVE_PROVIDERS.includes(name)} onChange=${(/** @type {Event} */ event) => setCompatible(inputChecked(event))} /> OpenAI-compatible upstream</label>
        <label class="grow">Base URL <input name="base_url" value=${baseUrl} placeholder="the provider's own endpoint"
          onInput=${(/** @type {Event} */ event) => setBaseUrl(inputValue(event))} /></label>
      </div>
      <table class="table keys">
        <thead><tr><th>Key name</th><th>Value</th><th>Models (comma-separated, * for all)</th><th>Weight</th><th></th></tr></thead>
        <tbody>${keys.map((key, index) => html`<tr key=${index} data-testid="form-key">
          <td><input name="key-name" value=${key.name} required onInput=${(/** @type {Event} */ event) => setKey(index, 'name', inputValue(event))} /></td>
          <td><input name="key-value" value=${key.value} required autocomplete="off" type=${key.id ? 'text' : 'password'}
            title=${key.id ? 'Shown redacted; leave it to keep the stored key, or type a new value' : 'The key, or env.VARIABLE'}
            onInput=${(/** @type {Event} */ event) => setKey(index, 'value', inputValue(event))} /></td>
          <td><input name="key-models" value=${key.models} required onInput=${(/** @type {Event} */ event) => setKey(index, 'models', inputValue(event))} /></td>
          <td><input name="key-weight" value=${key.weight} inputmode="decimal" size="4" onInput=${(/** @type {Event} */ event) => setKey(index, 'weight', inputValue(event))} /></td>
          <td><button type="button" class="secondary" onClick=${() => setKeys(keys.filter((_, at) => at !== index))}>Remove</button></td>
        </tr>`)}</tbody>
      </table>
      <div class="row">
        <button type="button" class="secondary" onClick=${() => setKeys([...keys, blankKey()])}>Add key</button>
        <span class="spacer"></span>
        <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
        <button type="submit" disabled=${saving}>${saving ? 'Saving…' : original ? 'Save' : 'Add provider'}</button>
      </div>
    </form>
  </${Card}>`
}
