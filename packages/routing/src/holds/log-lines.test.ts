import { describe, expect, it } from 'vitest'
import { checkLine, formatWait, holdLine, keyLabel, releaseLine, renewLine, skipLine } from './log-lines.ts'

const key = '3f2a9c1e-7b4d-4c1a-9e2f-0a1b2c3d4e5f'
const route = { provider: 'azure', model: 'gpt-4o', key }

describe('routing log lines', () => {
  it('read like the reference for a hold, a skip, a check and a release', () => {
    expect(holdLine({ ...route, reason: 'model_access', wholeKey: false, waitMs: 30_000, askedWaitMs: null })).toBe(
      'azure refused key 3f2a9c1e-... for gpt-4o: the key cannot reach this model. Holding that key back for 30s, then checking whether it can serve again',
    )
    expect(skipLine({ provider: 'azure', model: 'gpt-4o', skipped: 1, total: 2 })).toBe('Skipping 1 of 2 keys for azure/gpt-4o that the provider refused')
    expect(checkLine(route)).toBe('Checking whether key 3f2a9c1e-... can serve azure/gpt-4o again after the provider refused it')
    expect(releaseLine({ ...route, cause: 'served' })).toBe('Key 3f2a9c1e-... is serving azure/gpt-4o again')
  })

  it('say so when the provider asked for less than the 10 s floor', () => {
    expect(holdLine({ ...route, reason: 'rate_limit', wholeKey: false, waitMs: 10_000, askedWaitMs: 1_000 })).toBe(
      'azure refused key 3f2a9c1e-... for gpt-4o: the key is rate limited. It asked for 1s; holding that key back for 10s, which is the shortest hold the load balancer applies.',
    )
    expect(holdLine({ ...route, reason: 'rate_limit', wholeKey: false, waitMs: 12_000, askedWaitMs: 12_000 })).toContain('Holding that key back for 12s')
  })

  it('say when the whole key is held, and when a check renews the hold', () => {
    expect(holdLine({ ...route, reason: 'credential', wholeKey: true, waitMs: 29_000, askedWaitMs: null })).toContain('the key was rejected. Holding that key back from every model for 29s')
    expect(renewLine({ ...route, reason: 'credential', waitMs: 60_000, refusedAgain: true })).toBe(
      'Key 3f2a9c1e-... still cannot serve azure/gpt-4o: the key was rejected. Holding it back for 1m, then checking again',
    )
    expect(renewLine({ ...route, reason: 'credential', waitMs: 60_000, refusedAgain: false })).toContain('Holding it back for another 1m')
  })

  it('name every release cause', () => {
    for (const cause of ['settled', 'operator', 'key_edit', 'deleted'] as const) {
      expect(releaseLine({ ...route, cause })).toMatch(/^Key 3f2a9c1e-\.\.\. /)
    }
  })

  it('shorten only UUIDs, and format waits as a person says them', () => {
    expect(keyLabel('prod-2')).toBe('prod-2')
    expect(keyLabel(key)).toBe('3f2a9c1e-...')
    expect([400, 1_000, 29_600, 60_000, 150_000, 900_000, 3_900_000].map(formatWait)).toEqual(['400ms', '1s', '30s', '1m', '2m 30s', '15m', '1h 5m'])
    expect(skipLine({ provider: 'openai', model: 'o3', skipped: 1, total: 1 })).toBe('Skipping 1 of 1 key for openai/o3 that the provider refused')
  })
})
