import { describe, expect, it } from 'vitest'
import { HOLD_REASONS as ROUTING_HOLD_REASONS } from '@switchboard/routing'
import { HOLD_REASONS, incidentCause, incidentPaths, incidentQuery, incidentReasons, incidentWhere } from './incidents.js'

const WINDOW = { name: '6h', from: 1000, to: 22600 }
const incident = (fields: Partial<Parameters<typeof incidentCause>[0]> = {}) => ({
  id: 'i1', status: 'attention', provider: 'openai', models: ['gpt-4o'], key_ids: ['k1'], reasons: ['credential'], worst_state: 'failed' as const,
  action: 'held', checks: 0, opened_at: '2025-03-01T00:00:00Z', closed_at: null, duration_seconds: 60, ...fields,
})

describe('the incidents\' query', () => {
  it('asks for the first page of the window, sorted and searched as the route says, with every filter', () => {
    expect(incidentQuery({ sort: 'longest', search: 'prod', statuses: 'attention', nodes: 'a,b', unrelated: 'x' }, WINDOW)).toEqual({
      from: 1000, to: 22600, limit: 25, offset: 0, sort: 'longest', search: 'prod',
      statuses: 'attention', providers: undefined, models: undefined, reasons: undefined, states: undefined, scopes: undefined, regions: undefined, nodes: 'a,b',
    })
    expect(incidentQuery({ inc_offset: '50' }, WINDOW).offset).toBe('50')
  })

  it('names the question without the clock, and asks for the unfiltered total only with a filter on', () => {
    const plain = incidentPaths({}, WINDOW)
    expect(plain.page).toBe('/api/adaptive-routing/history/issues?from=1000&to=22600&limit=25&offset=0')
    expect(plain.question).toBe('/api/adaptive-routing/history/issues?from=6h&limit=25&offset=0')
    expect(plain.all).toBeNull()
    expect(plain.filtered).toBe(false)
    const filtered = incidentPaths({ providers: 'openai' }, WINDOW)
    expect(filtered.all).toBe('/api/adaptive-routing/history/issues?from=1000&to=22600&limit=1&offset=0')
    expect(incidentPaths({ search: 'x' }, WINDOW).filtered).toBe(true)
    expect(incidentPaths({ search: '' }, WINDOW).filtered).toBe(false)
  })

  it('keeps a custom window\'s times in its question', () => {
    expect(incidentPaths({}, { name: 'custom', from: 5, to: 9 }).question).toBe('/api/adaptive-routing/history/issues?from=5&to=9&limit=25&offset=0')
  })
})

describe('an incident in words', () => {
  it('says where it is, keys by name', () => {
    expect(incidentWhere(incident(), (id) => (id === 'k1' ? 'prod-1' : id))).toBe('openai · gpt-4o · prod-1')
    expect(incidentWhere(incident({ models: [], key_ids: [] }))).toBe('openai · every model')
    expect(incidentWhere(incident({ models: ['a', 'b'], key_ids: ['k1', 'k2'] }))).toBe('openai · a, b · k1, k2')
  })

  it('says its cause: the reasons (else the worst state), what routing did, and its checks', () => {
    expect(incidentCause(incident())).toBe('key rejected; routing held the key')
    expect(incidentCause(incident({ reasons: ['quota', 'rate_limit'], checks: 1 }))).toBe('out of quota, rate limited; routing held the key, checked 1 time')
    expect(incidentCause(incident({ reasons: [], worst_state: 'degraded', action: 'reduced_traffic', checks: 2 }))).toBe('Degraded; routing gave it less traffic, checked 2 times')
    expect(incidentCause(incident({ action: 'new_action' }))).toBe('key rejected; routing new_action')
    expect(incidentReasons(incident({ reasons: [] }))).toBe('Failed')
  })
})

describe('HOLD_REASONS', () => {
  it('is routing\'s list: the browser cannot import it, so this holds the copy to it', () => {
    expect(HOLD_REASONS).toEqual([...ROUTING_HOLD_REASONS])
  })
})
