// Adds or edits one provider. The body is config.json's providers.<name> object; fields the
// form does not show (aliases, azure_key_config, other network settings) are sent back as
// they came, so an edit changes only what was edited.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { api } from '../lib/api.js'
import { Card } from './notice.js'

const NATIVE = ['openai', 'azure', 'anthropic']

const blankKey = () => ({ name: '', value: '', models: '*', weight: '1' })

export function ProviderForm({ original, onSaved, onCancel }) {
  const [name, setName] = useState(original?.name ?? '')
  const [compatible, setCompatible] = useState(original ? original.custom_provider_config !== undefined : false)
  const [baseUrl, setBaseUrl] = useState(original?.network_config?.base_url ?? '')
  const [keys, setKeys] = useState(
    original ? original.keys.map((key) => ({ ...key, models: key.models.join(', '), weight: String(key.weight) })) : [blankKey()],
  )
  const [error, setError] = useState(null)
  const [saving, setSaving] = useState(false)
  const setKey = (index, field, value) => setKeys(keys.map((key, at) => (at === index ? { ...key, [field]: value } : key)))
  const submit = async (event) => {
    event.preventDefault()
    setSaving(true)
    setError(null)
    const network = { ...(original?.network_config ?? {}) }
    if (baseUrl.trim() === '') delete network.base_url
    else network.base_url = baseUrl.trim()
    const body = {
      keys: keys.map(({ models, weight, ...key }) => ({
        ...key,
        models: models.split(',').map((model) => model.trim()).filter((model) => model !== ''),
        weight: Number(weight),
      })),
      ...(Object.keys(network).length > 0 ? { network_config: network } : {}),
      ...(compatible || (!NATIVE.includes(name) && !original) ? { custom_provider_config: original?.custom_provider_config ?? { base_provider_type: 'openai' } } : {}),
    }
    try {
      if (original) await api('PUT', `/api/providers/${encodeURIComponent(original.name)}`, body)
      else await api('POST', '/api/providers', { name: name.trim(), ...body })
      onSaved(original ? `Saved ${original.name}. Every node uses it now; an edited key's holds are released.` : `Added ${name.trim()} on every node.`)
    } catch (failure) {
      setError(failure.message)
    } finally {
      setSaving(false)
    }
  }
  return html`<${Card} title=${original ? `Edit ${original.name}` : 'Add a provider'} testid="provider-form" className="form-card">
    <form onSubmit=${submit}>
      ${error ? html`<div class="notice error" role="alert">${error}</div>` : null}
      <div class="row">
        <label>Name <input name="name" value=${name} disabled=${original !== null} required placeholder="openai, azure, anthropic, groq…"
          onInput=${(event) => setName(event.currentTarget.value)} /></label>
        <label class="inline"><input type="checkbox" name="compatible" checked=${compatible || (!NATIVE.includes(name) && name !== '' && !original)}
          disabled=${original !== null || !NATIVE.includes(name)} onChange=${(event) => setCompatible(event.currentTarget.checked)} /> OpenAI-compatible upstream</label>
        <label class="grow">Base URL <input name="base_url" value=${baseUrl} placeholder="the provider's own endpoint"
          onInput=${(event) => setBaseUrl(event.currentTarget.value)} /></label>
      </div>
      <table class="table keys">
        <thead><tr><th>Key name</th><th>Value</th><th>Models (comma-separated, * for all)</th><th>Weight</th><th></th></tr></thead>
        <tbody>${keys.map((key, index) => html`<tr key=${index} data-testid="form-key">
          <td><input name="key-name" value=${key.name} required onInput=${(event) => setKey(index, 'name', event.currentTarget.value)} /></td>
          <td><input name="key-value" value=${key.value} required autocomplete="off" type=${key.id ? 'text' : 'password'}
            title=${key.id ? 'Shown redacted; leave it to keep the stored key, or type a new value' : 'The key, or env.VARIABLE'}
            onInput=${(event) => setKey(index, 'value', event.currentTarget.value)} /></td>
          <td><input name="key-models" value=${key.models} required onInput=${(event) => setKey(index, 'models', event.currentTarget.value)} /></td>
          <td><input name="key-weight" value=${key.weight} inputmode="decimal" size="4" onInput=${(event) => setKey(index, 'weight', event.currentTarget.value)} /></td>
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
