import { describe, expect, it } from 'vitest'
import { createSessionAffinity } from '@switchboard/routing'
import { createStateCopy } from './hub.ts'
import type { SessionAsked, SessionNews } from './protocol.ts'
import { sharedSessions } from './sharing.ts'

describe('sessions shared by the workers of a node', () => {
  it('asks the primary only for a session the worker does not know, and keeps it on the key its first worker told', async () => {
    // The primary reads a worker's news as it is sent (the channel's order, which the multi-process test exercises).
    const primary = createStateCopy()
    const told: SessionNews[] = []
    const asked: SessionAsked[] = []
    const worker = () =>
      sharedSessions(createSessionAffinity({ capacity: 10, idleMs: 60_000 }), {
        session(session) {
          told.push(session)
          primary.apply({ kind: 'sessions', sessions: [session] })
        },
        ask: async (_question, payload) => {
          asked.push(payload as SessionAsked)
          return primary.session(payload as SessionAsked)
        },
      })
    const first = worker()
    const second = worker()
    const route = { provider: 'openai', keyId: 'healthy' }

    // Nobody knows it yet: asked once, learned nothing.
    await first.learn('session-1', 'gpt-4o-mini', 0)
    expect(first.recall('session-1', 'gpt-4o-mini', 0)).toBeUndefined()
    first.remember('session-1', 'gpt-4o-mini', route, 1_000)
    expect(first.learn('session-1', 'gpt-4o-mini', 2_000)).toBeNull()

    // Its next request on the other worker: asked, kept on the key, and served there without telling the node again.
    await second.learn('session-1', 'gpt-4o-mini', 2_000)
    expect(second.recall('session-1', 'gpt-4o-mini', 2_000)).toEqual(route)
    second.remember('session-1', 'gpt-4o-mini', route, 2_000)
    expect(second.learn('session-1', 'gpt-4o-mini', 3_000)).toBeNull()
    expect(asked).toEqual([{ sessionId: 'session-1', model: 'gpt-4o-mini' }, { sessionId: 'session-1', model: 'gpt-4o-mini' }])
    expect(told.map((session) => session.route)).toEqual([route])

    // Another model of the session is another session (its own prompt cache).
    await second.learn('session-1', 'gpt-4o', 3_000)
    expect(second.recall('session-1', 'gpt-4o', 3_000)).toBeUndefined()
  })
})
