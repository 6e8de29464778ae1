import { describe, expect, it } from 'vitest'
import { describeEvent, onOff } from './events.js'

const base = { at: '2025-03-01T12:00:00Z', node_id: 'node-a', region: 'eu' }
const names: Record<string, string> = { k1: 'prod-1' }
const keyName = (id: string) => names[id] ?? id

describe('describeEvent', () => {
  it('says who saw a refusal and held the key, with the reason, the wait and the provider\'s words', () => {
    expect(describeEvent({ ...base, kind: 'hold:placed', origin: 'local', provider: 'openai', model: null, key_id: 'k1', reason: 'credential', wait_ms: 30_000, message: 'Incorrect API key' }, keyName))
      .toBe('Saw the refusal and held openai · prod-1 (key rejected, 30 s): “Incorrect API key”')
    expect(describeEvent({ ...base, kind: 'hold:placed', origin: 'peer', provider: 'openai', model: 'gpt-4o', key_id: 'k2', reason: 'quota', wait_ms: 0, message: 'out' }, keyName))
      .toBe('Held, because a peer saw the refusal, openai · gpt-4o · k2 (out of quota): “out”')
  })

  it('reads checks, releases and state changes', () => {
    expect(describeEvent({ ...base, kind: 'hold:checked', provider: 'openai', key_id: 'k1', outcome: 'refused_again', message: 'still bad' }, keyName)).toBe('Checked openai · prod-1: refused again — “still bad”')
    expect(describeEvent({ ...base, kind: 'hold:checked', provider: 'openai', key_id: 'k1', outcome: 'brand_new' }, keyName)).toBe('Checked openai · prod-1: brand_new')
    expect(describeEvent({ ...base, kind: 'hold:released', provider: 'openai', key_id: 'k1', by: 'operator' }, keyName)).toBe('Released openai · prod-1 after an operator')
    expect(describeEvent({ ...base, kind: 'route:state', provider: 'azure', model: 'gpt-4o', from: 'healthy', to: 'failed' })).toBe('azure · gpt-4o: Healthy → Failed')
  })

  it('reads a failed request that was pinned and kept on its failing provider', () => {
    expect(describeEvent({ ...base, kind: 'request:failed', provider: 'azure', model: 'gpt-4o', failure_class: 'transient', pinned: true, named_provider: 'azure', kept_on_failing: true }))
      .toBe('A request failed on azure · gpt-4o (transient errors); it named azure, so routing could not move it, kept there because re-routing was off')
  })

  it('reads a settings change field by field, and one that changed no switch', () => {
    expect(describeEvent({ ...base, kind: 'settings:changed', origin: 'api', fields: ['prune_failed_fallbacks', 'history_retention_days'], before: { prune_failed_fallbacks: false, history_retention_days: 7 }, after: { prune_failed_fallbacks: true, history_retention_days: 30 } }))
      .toBe('Settings changed (api): prune_failed_fallbacks off → on, history_retention_days 7 → 30')
    expect(describeEvent({ ...base, kind: 'settings:changed', fields: [] })).toBe('Settings changed: no switch')
  })

  it('reads key and provider edits', () => {
    expect(describeEvent({ ...base, kind: 'key:edited', created: true, provider: 'openai', key_name: 'prod-3', fields: [] })).toBe('Added key prod-3 of openai')
    expect(describeEvent({ ...base, kind: 'key:edited', provider: 'openai', key_id: 'k1', fields: ['value', 'weight'] }, keyName)).toBe('Edited key prod-1 of openai (value, weight)')
    expect(describeEvent({ ...base, kind: 'provider:deleted', provider: 'groq' })).toBe('Deleted provider groq')
  })

  it('shows an unknown kind with its own fields, not the ones every event has', () => {
    expect(describeEvent({ ...base, kind: 'future:thing', provider: 'openai', entity: 'x', extra: 1 })).toBe('future:thing openai {"extra":1}')
    expect(describeEvent({ ...base, kind: 'future:bare' })).toBe('future:bare  ')
  })

  it('reads a switch as on, off, — or as it is', () => {
    expect([true, false, undefined, null, 3].map(onOff)).toEqual(['on', 'off', '—', 'null', '3'])
  })
})
