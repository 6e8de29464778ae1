// The provider form's state and the body it sends (config.json's providers.<name> object).
// Fields the form does not show (aliases, azure_key_config, other network settings) go back as
// they came, so an edit changes only what was edited.

/** @typedef {import('./answers').ProviderEntry} ProviderEntry */
/** @typedef {{ id?: string | undefined, name: string, value: string, models: string, weight: string }} FormKey A key as the form edits it: models and weight as typed. */
/** @typedef {{ original: ProviderEntry | null, name: string, compatible: boolean, baseUrl: string, keys: FormKey[] }} ProviderFormState */

/** The provider types the gateway speaks natively; any other name is an OpenAI-compatible upstream. */
export const NATIVE_PROVIDERS = ['openai', 'azure', 'anthropic']

/** A new key row: every model, weight 1. */
export const blankKey = () => /** @type {FormKey} */ ({ name: '', value: '', models: '*', weight: '1' })

/** The form's key rows for `original` (its keys as text), or one blank row for a new provider. */
export function formKeys(/** @type {ProviderEntry | null} */ original) {
  return original ? original.keys.map((key) => /** @type {FormKey} */ ({ ...key, models: key.models.join(', '), weight: String(key.weight) })) : [blankKey()]
}

/** A new provider whose name is not a native type is OpenAI-compatible whatever the checkbox says. */
export function isCompatible(/** @type {Omit<ProviderFormState, 'keys' | 'baseUrl'>} */ form) {
  return form.compatible || (!form.original && form.name.trim() !== '' && !NATIVE_PROVIDERS.includes(form.name.trim()))
}

/** "gpt-4o, gpt-4o-mini ,, *" -> ["gpt-4o", "gpt-4o-mini", "*"] */
export const modelList = (/** @type {string} */ text) => text.split(',').map((model) => model.trim()).filter((model) => model !== '')

/** The body of PUT /api/providers/:name (an edit) or, with `name`, POST /api/providers (a new one). */
export function providerBody(/** @type {ProviderFormState} */ form) {
  const network = { ...(form.original?.network_config ?? {}) }
  if (form.baseUrl.trim() === '') delete network.base_url
  else network.base_url = form.baseUrl.trim()
  const body = {
    keys: form.keys.map(({ models, weight, ...key }) => ({ ...key, models: modelList(models), weight: Number(weight) })),
    ...(Object.keys(network).length > 0 ? { network_config: network } : {}),
    ...(isCompatible(form) ? { custom_provider_config: form.original?.custom_provider_config ?? { base_provider_type: 'openai' } } : {}),
  }
  return form.original ? body : { name: form.name.trim(), ...body }
}
