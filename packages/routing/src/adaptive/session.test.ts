import { describe, expect, it } from 'vitest'
import { createAdaptiveBalancer } from './balancer.ts'
import { applySessionAffinity, createSessionAffinity, MAX_SESSION_TTL_MS, readSessionHeaders } from './session.ts'
import { defaultLoadBalancerSettings, type BalancerProvider } from './types.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [
  { provider: 'openai', keys: [{ id: 'o1', name: 'o1', models: [MODEL], weight: 1 }, { id: 'o2', name: 'o2', models: [MODEL], weight: 1 }] },
  { provider: 'azure', keys: [{ id: 'a1', name: 'a1', models: [MODEL], weight: 1 }] },
]

describe('createSessionAffinity', () => {
  it('remembers per session and model, forgets idle sessions and the least recently used beyond capacity', () => {
    const sessions = createSessionAffinity({ capacity: 2, idleMs: 1_000 })
    sessions.remember('s1', MODEL, { provider: 'openai', keyId: 'o1' }, 0)
    sessions.remember('s2', MODEL, { provider: 'azure', keyId: 'a1' }, 0)
    expect(sessions.recall('s1', MODEL, 500)).toEqual({ provider: 'openai', keyId: 'o1' })
    expect(sessions.recall('s1', 'gpt-4o-mini', 500)).toBeUndefined()
    sessions.remember('s3', MODEL, { provider: 'azure', keyId: 'a1' }, 600)
    expect(sessions.recall('s3', MODEL, 600)).toEqual({ provider: 'azure', keyId: 'a1' })
    // s2 was the least recently used.
    expect(sessions.recall('s2', MODEL, 600)).toBeUndefined()
    expect(sessions.recall('s1', MODEL, 1_400)).toEqual({ provider: 'openai', keyId: 'o1' })
    expect(sessions.recall('s3', MODEL, 1_700)).toBeUndefined()
  })
})

describe('readSessionHeaders', () => {
  it('reads the agents\' session headers, ours first, and the ttl and off switch', () => {
    expect(readSessionHeaders({ 'x-claude-code-session-id': 'cc', session_id: 'codex', 'x-session-affinity': 'oc' })).toEqual({ sessionId: 'cc', ttlMs: null })
    expect(readSessionHeaders({ session_id: 'codex', 'x-session-id': 'oc' })).toEqual({ sessionId: 'codex', ttlMs: null })
    expect(readSessionHeaders({ 'x-session-affinity': 'oc', 'x-session-id': 'other' }).sessionId).toBe('oc')
    expect(readSessionHeaders({ 'x-bf-session-id': 'ours', 'x-claude-code-session-id': 'cc', 'x-bf-session-ttl': '90' })).toEqual({ sessionId: 'ours', ttlMs: 90_000 })
    expect(readSessionHeaders({ 'x-bf-session-id': 'ours', 'x-bf-session-ttl': '999999' }).ttlMs).toBe(MAX_SESSION_TTL_MS)
    expect(readSessionHeaders({ 'x-bf-session-id': 'ours', 'x-bf-session-ttl': 'soon' }).ttlMs).toBeNull()
    expect(readSessionHeaders({ 'x-bf-session-id': 'ours', 'x-bf-session-affinity': 'off' })).toEqual({ sessionId: null, ttlMs: null })
    expect(readSessionHeaders({})).toEqual({ sessionId: null, ttlMs: null })
  })

  it('Codex CLI 0.1xx: session-id names the session, thread-id only without it, x-client-request-id never (issue 37)', () => {
    const codex = { 'session-id': 'codex-session', 'thread-id': 'codex-thread', 'x-client-request-id': 'one-request' }
    expect(readSessionHeaders(codex)).toEqual({ sessionId: 'codex-session', ttlMs: null })
    expect(readSessionHeaders({ 'thread-id': 'codex-thread', 'x-client-request-id': 'one-request' }).sessionId).toBe('codex-thread')
    expect(readSessionHeaders({ 'x-client-request-id': 'one-request' }).sessionId).toBeNull()
    expect(readSessionHeaders({ ...codex, 'x-bf-session-id': 'ours' }).sessionId).toBe('ours')
  })

  it('a session\'s own ttl replaces the idle limit for it', () => {
    const sessions = createSessionAffinity({ capacity: 10, idleMs: 1_000 })
    sessions.remember('short', MODEL, { provider: 'openai', keyId: 'o1' }, 0, 100)
    sessions.remember('long', MODEL, { provider: 'openai', keyId: 'o2' }, 0, 5_000)
    expect(sessions.recall('short', MODEL, 200)).toBeUndefined()
    expect(sessions.recall('long', MODEL, 3_000)).toEqual({ provider: 'openai', keyId: 'o2' })
  })
})

describe('applySessionAffinity', () => {
  function setup() {
    const held = new Set<string>()
    const balancer = createAdaptiveBalancer({ providers, isHeld: (_, keyId) => held.has(keyId) })
    const decide = () => balancer.selectDirection(MODEL, { settings: defaultLoadBalancerSettings })
    return { balancer, held, decide, offered: balancer.isRouteOffered }
  }

  it('keeps the session on its provider and key, moving it to the front of the offered ones', () => {
    const { decide, offered } = setup()
    const result = applySessionAffinity(decide(), { provider: 'azure', keyId: 'a1' }, offered)
    expect(result.outcome).toBe('kept')
    expect(result.preferKeyId).toBe('a1')
    expect(result.decision.primary).toEqual({ provider: 'azure', model: MODEL })
    expect(result.decision.fallbacks).toEqual([{ provider: 'openai', model: MODEL }])
  })

  it('moves the session when its key is held or failed, or its provider is no longer offered', () => {
    const { balancer, held, decide, offered } = setup()
    held.add('o2')
    balancer.holdsChanged()
    expect(applySessionAffinity(decide(), { provider: 'openai', keyId: 'o2' }, offered).outcome).toBe('moved_key_unavailable')
    balancer.failRoute({ provider: 'openai', model: MODEL, keyId: 'o1' }, 0)
    expect(applySessionAffinity(decide(), { provider: 'openai', keyId: 'o1' }, offered)).toMatchObject({ outcome: 'moved_not_offered', preferKeyId: undefined })
    expect(applySessionAffinity(decide(), undefined, offered).outcome).toBe('none')
  })
})
