import { describe, expect, it } from 'vitest'
import { blankKey, formKeys, isCompatible, modelList, providerBody } from './providers.js'

const original = {
  name: 'groq', type: 'openai-compatible', aliases: { fast: 'llama' },
  network_config: { base_url: 'https://api.groq.com/openai/v1', timeout_ms: 5000 },
  custom_provider_config: { base_provider_type: 'openai', extra: true },
  keys: [{ id: 'k1', name: 'prod-1', value: 'gsk_…redacted', models: ['llama', 'mixtral'], weight: 2 }],
}

describe('the provider form', () => {
  it('edits the original\'s keys as text, or starts a new provider with one blank key', () => {
    expect(formKeys(original)).toEqual([{ id: 'k1', name: 'prod-1', value: 'gsk_…redacted', models: 'llama, mixtral', weight: '2' }])
    expect(formKeys(null)).toEqual([blankKey()])
    expect(blankKey()).toEqual({ name: '', value: '', models: '*', weight: '1' })
  })

  it('reads a models list, dropping blanks', () => {
    expect(modelList(' gpt-4o, o3 ,, *,')).toEqual(['gpt-4o', 'o3', '*'])
    expect(modelList('')).toEqual([])
  })

  it('treats a new provider of a name that is not native as OpenAI-compatible, whatever the box says', () => {
    expect(isCompatible({ original: null, name: 'groq', compatible: false })).toBe(true)
    expect(isCompatible({ original: null, name: 'openai', compatible: false })).toBe(false)
    expect(isCompatible({ original: null, name: 'openai', compatible: true })).toBe(true)
    expect(isCompatible({ original: null, name: '', compatible: false })).toBe(false)
    expect(isCompatible({ original: null, name: ' openai ', compatible: false })).toBe(false)
    expect(isCompatible({ original: { ...original, name: 'azure' }, name: 'azure', compatible: false })).toBe(false)
  })
})

describe('providerBody', () => {
  it('sends a new native provider with its trimmed name, parsed keys, and no network or custom config', () => {
    expect(providerBody({ original: null, name: ' openai ', compatible: false, baseUrl: '  ', keys: [{ name: 'p', value: 'sk', models: 'gpt-4o, o3', weight: '0.5' }] })).toEqual({
      name: 'openai', keys: [{ name: 'p', value: 'sk', models: ['gpt-4o', 'o3'], weight: 0.5 }],
    })
  })

  it('sends a new compatible provider with the default custom config and its base URL', () => {
    expect(providerBody({ original: null, name: 'groq', compatible: false, baseUrl: ' https://x/v1 ', keys: [] })).toEqual({
      name: 'groq', keys: [], network_config: { base_url: 'https://x/v1' }, custom_provider_config: { base_provider_type: 'openai' },
    })
  })

  it('sends an edit without a name, keeping the network and custom settings the form does not show', () => {
    const body = providerBody({ original, name: 'groq', compatible: true, baseUrl: '', keys: formKeys(original) })
    expect(body).toEqual({
      keys: [{ id: 'k1', name: 'prod-1', value: 'gsk_…redacted', models: ['llama', 'mixtral'], weight: 2 }],
      network_config: { timeout_ms: 5000 },
      custom_provider_config: { base_provider_type: 'openai', extra: true },
    })
    expect(original.network_config.base_url).toBe('https://api.groq.com/openai/v1')
  })

  it('sends a weight that is not a number as NaN for the API to refuse (JSON writes it null)', () => {
    const body = providerBody({ original: null, name: 'openai', compatible: false, baseUrl: '', keys: [{ name: 'p', value: 'sk', models: '*', weight: 'heavy' }] })
    expect(JSON.parse(JSON.stringify(body)).keys[0].weight).toBeNull()
  })
})
