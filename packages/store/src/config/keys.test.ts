import { describe, expect, it } from 'vitest'
import { deriveKeyId, keepSecrets, providerType, redactKey, redactKeySecrets } from './keys.ts'

const redactVertexKeyConfig = (config: Record<string, unknown>) => redactKeySecrets({ value: '', vertex_key_config: config }).vertex_key_config

describe('redactKey', () => {
  it('shows the first 3 and last 4 characters of a long value', () => {
    expect(redactKey('sk-proj-1234567890abcd')).toBe('sk-...abcd')
  })

  it('masks a short value whole, without giving away its length', () => {
    expect(redactKey('short-secret')).toBe('****')
    expect(redactKey('x')).toBe('****')
  })

  it('shows env references as written: they name a variable, not a secret', () => {
    expect(redactKey('env.OPENAI_API_KEY')).toBe('env.OPENAI_API_KEY')
  })

  it('redacts a key without touching the original', () => {
    const key = { id: 'a', value: 'sk-live-000011112222dddd' }
    expect(redactKeySecrets(key).value).toBe('sk-...dddd')
    expect(key.value).toBe('sk-live-000011112222dddd')
  })
})

describe('deriveKeyId', () => {
  it('is stable for one provider + name and differs across providers and names', () => {
    expect(deriveKeyId('openai', 'prod-1')).toBe(deriveKeyId('openai', 'prod-1'))
    expect(deriveKeyId('openai', 'prod-1')).not.toBe(deriveKeyId('openai', 'prod-2'))
    expect(deriveKeyId('openai', 'prod-1')).not.toBe(deriveKeyId('groq', 'prod-1'))
  })

  it('cannot be fooled by moving characters between provider and name', () => {
    expect(deriveKeyId('ab', 'c')).not.toBe(deriveKeyId('a', 'bc'))
  })
})

describe('providerType', () => {
  it('names built-in providers after themselves and custom ones after their base type', () => {
    expect(providerType('anthropic')).toBe('anthropic')
    expect(providerType('groq', { base_provider_type: 'openai' })).toBe('openai')
    expect(() => providerType('groq')).toThrow(/base_provider_type/)
  })
})

describe('Vertex AI key configs (issue 20)', () => {
  const credentials = JSON.stringify({ type: 'service_account', client_email: 'sa@p.iam.gserviceaccount.com', private_key: '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n' })

  it('redacts the service-account credentials and shows project and region', () => {
    const shown = redactVertexKeyConfig({ project_id: 'my-project', region: 'us-central1', auth_credentials: credentials })
    expect(shown).toEqual({ project_id: 'my-project', region: 'us-central1', auth_credentials: redactKey(credentials) })
    expect(JSON.stringify(shown)).not.toContain('PRIVATE KEY')
    const key = redactKeySecrets({ id: 'a', value: 'service-account', vertex_key_config: { project_id: 'p', region: 'global', auth_credentials: credentials } })
    expect(JSON.stringify(key)).not.toContain('PRIVATE KEY')
  })

  it('keeps the stored credentials when the redacted form is sent back, and takes new ones', () => {
    const stored = { value: 'service-account', vertex_key_config: { project_id: 'my-project', region: 'us-central1', auth_credentials: credentials } }
    expect(keepSecrets(redactKeySecrets(stored), stored)).toEqual(stored)
    const replaced = { ...stored, vertex_key_config: { ...stored.vertex_key_config, auth_credentials: credentials.replace('sa@', 'other@') } }
    expect(keepSecrets(replaced, stored)).toEqual(replaced)
  })

  it('knows gemini and vertex as built-in providers', () => {
    expect(providerType('gemini')).toBe('gemini')
    expect(providerType('vertex')).toBe('vertex')
  })
})
