import { describe, expect, it } from 'vitest'
import { holdLabel, holdsOn, holdsOnKeys, holdStatus, releaseBody, releasedText } from './holds.js'

const hold = (fields: Partial<Parameters<typeof holdStatus>[0]> = {}) => ({
  provider: 'openai', key_id: 'k1', key_name: 'prod-1', model: null, reason: 'credential', message: 'bad key',
  rung: 1, checks: 0, since: '2025-03-01T11:00:00Z', next_check_at: '2025-03-01T12:00:30Z', ...fields,
})
const NOW = Date.parse('2025-03-01T12:00:00Z')

describe('which holds touch a key', () => {
  const holds = [hold(), hold({ key_id: 'k2', model: 'gpt-4o' }), hold({ provider: 'azure' })]

  it('a whole-key hold bars every model; a model hold only its model', () => {
    expect(holdsOn(holds, 'openai', 'o3', 'k1')).toEqual([holds[0]])
    expect(holdsOn(holds, 'openai', 'gpt-4o', 'k2')).toEqual([holds[1]])
    expect(holdsOn(holds, 'openai', 'o3', 'k2')).toEqual([])
    expect(holdsOn(undefined, 'openai', 'o3', 'k1')).toEqual([])
  })

  it('an incident\'s keys find their holds on any model of their provider only', () => {
    expect(holdsOnKeys(holds, 'openai', ['k1', 'k2'])).toEqual([holds[0], holds[1]])
    expect(holdsOnKeys(holds, 'openai', [])).toEqual([])
  })
})

describe('holdStatus', () => {
  it('is held until its next check, with the rung and the checks so far', () => {
    expect(holdStatus(hold(), NOW)).toEqual({ status: 'held', label: 'Held', detail: 'ladder rung 1, no check yet; next check in 30 s' })
    expect(holdStatus(hold({ rung: 3, checks: 1, next_check_at: '2025-03-01T14:00:00Z' }), NOW).detail).toBe('ladder rung 3, 1 check so far; next check in 2 h')
  })

  it('is due within a second of its check and after it', () => {
    expect(holdStatus(hold({ next_check_at: '2025-03-01T12:00:00.500Z' }), NOW).status).toBe('due')
    expect(holdStatus(hold({ checks: 2, next_check_at: '2025-03-01T11:00:00Z' }), NOW)).toEqual({ status: 'due', label: 'Check due', detail: 'ladder rung 1, 2 checks so far; the next request this key could serve carries the check' })
    expect(holdStatus(hold({ next_check_at: 'garbage' }), NOW).status).toBe('due')
  })
})

describe('releasing', () => {
  it('names exactly the hold: the whole key, or its one model', () => {
    expect(releaseBody(hold())).toEqual({ provider: 'openai', key_id: 'k1' })
    expect(releaseBody(hold({ model: 'gpt-4o' }))).toEqual({ provider: 'openai', key_id: 'k1', model: 'gpt-4o' })
    expect(holdLabel(hold())).toBe('openai:k1:*')
    expect(holdLabel(hold({ model: 'gpt-4o' }))).toBe('openai:k1:gpt-4o')
  })

  it('says what it released', () => {
    expect(releasedText(0)).toBe('Nothing named was held any more.')
    expect(releasedText(1)).toBe('Released 1 hold on every node.')
    expect(releasedText(3)).toBe('Released 3 holds on every node.')
  })
})
