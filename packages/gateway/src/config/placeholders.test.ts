import { describe, expect, it } from 'vitest'
import { configEnvReferences, describePlaceholders, placeholderSecrets } from './placeholders.ts'

describe('placeholderSecrets', () => {
  it('names each setting that still holds a replace-me placeholder, once, in order', () => {
    expect(
      placeholderSecrets([
        { name: 'SWITCHBOARD_FLEET_SECRET', value: 'replace-me-with-openssl-rand-hex-32' },
        { name: 'SWITCHBOARD_ADMIN_TOKENS', value: 'a-real-admin-token-0001:update' },
        { name: 'DATABASE_URL', value: 'postgres://switchboard:replace-me@postgres:5432/switchboard' },
        { name: 'GATEWAY_KEY_APP', value: 'REPLACE-ME-gateway-key' },
        { name: 'OPENAI_KEY_1', value: undefined },
        { name: 'DATABASE_URL', value: 'replace-me' },
      ]),
    ).toEqual(['SWITCHBOARD_FLEET_SECRET', 'DATABASE_URL', 'GATEWAY_KEY_APP'])
  })

  it('accepts real values, even ones that mention "replace"', () => {
    expect(placeholderSecrets([{ name: 'SWITCHBOARD_FLEET_SECRET', value: 'replacement-secret-8c1f0d5e' }])).toEqual([])
  })
})

describe('configEnvReferences', () => {
  it('finds every env.VAR of a config, nested anywhere', () => {
    const source = {
      providers: { openai: { keys: [{ name: 'a', value: 'env.OPENAI_KEY_1' }, { name: 'b', value: 'sk-literal' }] } },
      gateway_keys: [{ name: 'apps', value: 'env.GATEWAY_KEY_APP' }],
      admin: { tokens: [{ token: 'env.ADMIN_TOKEN', role: 'update' }] },
    }
    expect(configEnvReferences(source)).toEqual(['ADMIN_TOKEN', 'GATEWAY_KEY_APP', 'OPENAI_KEY_1'])
  })
})

describe('describePlaceholders', () => {
  it('names the variables and says what to do', () => {
    const sentence = describePlaceholders(['SWITCHBOARD_FLEET_SECRET', 'GATEWAY_KEY_APP'])
    expect(sentence).toContain('SWITCHBOARD_FLEET_SECRET, GATEWAY_KEY_APP still hold the "replace-me" placeholder')
    expect(sentence).toContain('Refusing to start')
  })
})
