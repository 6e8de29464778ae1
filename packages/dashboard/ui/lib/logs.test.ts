import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { historyParams, logPaths, logQuery, routingSentences, routingTags } from './logs.js'

type Entry = Parameters<typeof routingSentences>[0]
const routing = (fields: Partial<Entry['routing']> = {}): Entry['routing'] => ({ picked_by: 'routing', moved_off: null, skipped_keys: [], check: null, added_fallback_served: false, session_kept: null, log: [], ...fields })
const entry = (fields: Partial<Entry> = {}): Entry => ({
  id: 'r1', at: '2025-03-01T00:00:00Z', node_id: 'a', region: 'eu',
  requested: { provider: null, model: 'gpt-4o', fallbacks: [], session_id: null },
  served: { provider: 'openai', model: 'gpt-4o', key_id: 'k1', key_name: 'prod-1' },
  status: 200, failure_class: null, message: null, latency_ms: 120, ttft_ms: null, usage: null, stream: false, attempts: [], routing: routing(), ...fields,
})

describe('the log\'s query', () => {
  it('maps the route\'s log_ params to the API\'s names, with the flags and the window', () => {
    expect(logQuery({ log_providers: 'openai', log_status: '5xx', moved_off: 'true', log_sort: 'slowest', log_search: 'x', session_id: 's', log_offset: '50', providers: 'ignored' }, { from: 1, to: 2 })).toEqual({
      from: 1, to: 2, limit: 50, offset: '50', sort: 'slowest', search: 'x', session_id: 's', request_id: undefined,
      providers: 'openai', models: undefined, status: '5xx', failure_classes: undefined, nodes: undefined, picked_by: undefined, key_ids: undefined,
      moved_off: 'true', check: undefined, added_fallback: undefined,
    })
  })

  it('names its question without the clock', () => {
    expect(logPaths({}, { name: '1h', from: 10, to: 3610 })).toEqual({ page: '/api/logs?from=10&to=3610&limit=50&offset=0', question: '/api/logs?from=1h&limit=50&offset=0' })
  })
})

describe('routingSentences', () => {
  it('tells a routed request served first time', () => {
    expect(routingSentences(entry())).toEqual(['The request asked for gpt-4o without naming a provider, so routing picked one.', 'openai/gpt-4o served it with key prod-1.'])
  })

  it('tells a pinned request moved off its failing provider, the keys it skipped and the check it carried', () => {
    const lines = routingSentences(entry({
      requested: { provider: 'azure', model: 'gpt-4o', fallbacks: [], session_id: 's' },
      routing: routing({ moved_off: { provider: 'azure', reason: 'transient' }, skipped_keys: [{ key_name: 'prod-2', provider: 'openai', model: 'gpt-4o', reason: 'quota' }], check: { key_name: 'prod-1', provider: 'openai', model: 'gpt-4o', outcome: 'served' }, added_fallback_served: true, session_kept: false }),
    }))
    expect(lines).toEqual([
      'The request named azure/gpt-4o.',
      'azure was failing for this model (transient errors), and with re-routing on, routing sent it to openai/gpt-4o instead.',
      'openai/gpt-4o served it with key prod-1.',
      'It skipped prod-2 on openai/gpt-4o: out of quota.',
      'It was the check of held key prod-1 on openai/gpt-4o: the key served, so its hold was released.',
      'A fallback that routing added (not one the request sent) served it.',
      'Its session had another provider or key, which was failing or held, so it moved.',
    ])
  })

  it('tells a failure with its class and message, or says there was none', () => {
    const failed = entry({ status: 503, failure_class: 'transient', message: 'upstream down', served: { provider: null, model: null, key_id: null, key_name: null }, routing: routing({ pinned_kept_failed: true }), requested: { provider: 'azure', model: 'gpt-4o', fallbacks: [], session_id: null } })
    expect(routingSentences(failed).slice(1)).toEqual(['azure was failing, but re-routing was off, so routing kept the request on it.', 'It failed with 503 (transient errors): upstream down.'])
    expect(routingSentences(entry({ status: 400 })).at(-1)).toBe('It failed with 400: no message.')
  })
})

describe('routingTags', () => {
  it('tags what routing did, then who picked the provider', () => {
    expect(routingTags(routing())).toEqual({ tags: [], pickedBy: 'routing picked' })
    const tagged = routingTags(routing({ picked_by: 'caller', moved_off: { provider: 'azure', reason: 'transient' }, check: { key_name: 'prod-1', provider: 'openai', model: 'gpt-4o', outcome: 'refused_again' }, added_fallback_served: true, skipped_keys: [{ key_name: 'a', provider: 'openai', model: 'm', reason: 'credential' }, { key_name: 'b', provider: 'openai', model: 'm', reason: 'odd' }] }))
    expect(tagged).toEqual({
      tags: [
        { text: 'moved off azure', title: 'moved off azure: transient', attention: true },
        { text: 'check · refused again', title: 'checked held key prod-1: refused_again' },
        { text: 'added fallback' },
        { text: 'skipped 2', title: 'a: key rejected, b: odd' },
      ],
      pickedBy: 'caller named',
    })
  })
})

describe('historyParams', () => {
  beforeAll(() => {
    vi.stubEnv('TZ', 'Asia/Kolkata')
  })
  afterAll(() => {
    vi.unstubAllEnvs()
  })

  it('opens the request\'s stretch as a custom window in local time, its entities marked, Live off', () => {
    expect(historyParams({ from: '2025-03-01T00:00:00Z', to: 1740788400, entities: ['route:openai:gpt-4o:k1', 'key:openai:k1'] })).toEqual({
      window: 'custom', from: '2025-03-01T05:30', to: '2025-03-01T05:50', live: null, entities: 'route:openai:gpt-4o:k1,key:openai:k1',
    })
  })
})
