import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { AttemptFailure, FailureClass } from '../failures/failure-class.ts'
import { HOLD_REASONS, type HoldReason } from '../failures/failure-class.ts'
import type { HoldEntry } from './entry.ts'
import { createHolds } from './holds.ts'
import { baseWait, nodeWaitMs, startingRung } from './ladder.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND

function failure(failureClass: FailureClass, options: Partial<AttemptFailure> = {}): AttemptFailure {
  const scope = failureClass === 'credential' ? 'key' : 'model'
  return { failureClass, scope, status: 400, waitHintMs: null, message: `refused: ${failureClass}`, code: null, ...options }
}

/** The base waits (s) a hold for each reason walks through on repeated failed checks, written out by hand from the spec's caps. */
const LADDERS: Record<HoldReason, number[]> = {
  credential: [30, 60, 120, 240, 480, 900, 900],
  quota: [30, 60, 120, 240, 300, 300],
  model_access: [30, 60, 120, 240, 300, 300],
  model_gone: [30, 60, 120, 240, 480, 960, 1800, 1800],
  region_blocked: [30, 60, 120, 240, 480, 900, 900],
  rate_limit: [30, 60, 120, 120],
}

describe('the ladder', () => {
  for (const reason of HOLD_REASONS) {
    it(`walks ${reason} from 30 s, doubling after each failed check, up to its cap`, () => {
      // random 0.5 makes the jitter factor exactly 1, so each due time is the base wait.
      const holds = createHolds({ nodeId: 'node-a', random: () => 0.5 })
      let now = 1_000_000
      const settlement = holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: 'gpt-4o', startedAt: now - 50, now, failure: failure(reason), check: false })
      expect(settlement.events.map((event) => event.kind)).toEqual(['placed'])
      const waits: number[] = []
      for (let step = 0; step < LADDERS[reason].length; step++) {
        const [route] = holds.holdsOn('openai', 'k1', 'gpt-4o')
        waits.push(route!.entry.baseWaitMs / SECOND)
        expect(route!.dueAt - route!.entry.waitStartedAt).toBe(route!.entry.baseWaitMs)
        expect(holds.claimCheck('openai', 'k1', 'gpt-4o', route!.dueAt - 1)).toBe(false)
        now = route!.dueAt
        expect(holds.claimCheck('openai', 'k1', 'gpt-4o', now)).toBe(true)
        const answer = holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: 'gpt-4o', startedAt: now, now: now + 200, failure: failure(reason), check: true })
        expect(answer.events).toMatchObject([{ kind: 'renewed', outcome: 'refused_again' }])
        now += 200
      }
      expect(waits).toEqual(LADDERS[reason])
    })
  }

  it('uses a provider-stated wait as given, with a 10 s floor, and still climbs the rung on a failed check', () => {
    const holds = createHolds({ nodeId: 'node-a', random: () => 0.99 })
    holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: 'gpt-4o', startedAt: 0, now: 100, failure: failure('rate_limit', { waitHintMs: 1_000 }), check: false })
    let [route] = holds.holdsOn('openai', 'k1', 'gpt-4o')
    expect(route!.entry).toMatchObject({ baseWaitMs: 10 * SECOND, waitSource: 'provider', rung: 0 })
    expect(route!.dueAt).toBe(100 + 10 * SECOND)
    holds.recordAnswer({ provider: 'openai', keyId: 'k1', model: 'gpt-4o', startedAt: route!.dueAt, now: route!.dueAt + 1, failure: failure('rate_limit', { waitHintMs: 45_000 }), check: true })
    ;[route] = holds.holdsOn('openai', 'k1', 'gpt-4o')
    expect(route!.entry).toMatchObject({ baseWaitMs: 45 * SECOND, waitSource: 'provider', rung: 1, checks: 1 })
    expect(route!.dueAt).toBe(route!.entry.waitStartedAt + 45 * SECOND)
  })
})

describe('jitter', () => {
  it('keeps every ladder wait within ±10 % of its base, and provider waits exact with the 10 s floor (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_000, max: 30 * MINUTE }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (base, draw) => {
        const wait = nodeWaitMs({ baseWaitMs: base, waitSource: 'ladder' }, () => draw)
        return wait >= Math.floor(base * 0.9) && wait <= Math.ceil(base * 1.1)
      }),
    )
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 30 * MINUTE }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (hint, draw) => {
        const { baseWaitMs: base, waitSource } = baseWait('rate_limit', 0, hint)
        return waitSource === 'provider' && base === Math.max(hint, 10 * SECOND) && nodeWaitMs({ baseWaitMs: base, waitSource }, () => draw) === base
      }),
    )
  })

  it('spreads the due times of two nodes over the same hold by at most ±10 % of the shared base', () => {
    const low = createHolds({ nodeId: 'node-a', random: () => 0 })
    const high = createHolds({ nodeId: 'node-b', random: () => 0.999999 })
    const settlement = low.recordAnswer({ provider: 'openai', keyId: 'k1', model: 'gpt-4o', startedAt: 0, now: 0, failure: failure('quota'), check: false })
    high.merge(settlement.changed, 0)
    const [lowRoute] = low.holdsOn('openai', 'k1', 'gpt-4o')
    const [highRoute] = high.holdsOn('openai', 'k1', 'gpt-4o')
    expect(lowRoute!.dueAt).toBe(27 * SECOND)
    expect(highRoute!.dueAt).toBe(33 * SECOND)
  })
})

describe('startingRung', () => {
  const tombstone = (releaseCause: HoldEntry['releaseCause'], reason: HoldReason = 'rate_limit'): HoldEntry => ({
    provider: 'openai',
    keyId: 'k1',
    model: 'gpt-4o',
    state: 'released',
    reason,
    message: '',
    since: 0,
    waitStartedAt: 0,
    baseWaitMs: 60_000,
    waitSource: 'ladder',
    rung: 2,
    checks: 2,
    releasedAt: 100_000,
    releaseCause,
    version: { wallMs: 100_000, counter: 0, nodeId: 'node-a' },
  })

  it('resumes the rung of a hold a served request released within 10 minutes for the same reason', () => {
    expect(startingRung(tombstone('served'), 'rate_limit', 100_000 + 10 * MINUTE)).toBe(2)
    expect(startingRung(tombstone('settled'), 'rate_limit', 100_000 + MINUTE)).toBe(2)
  })

  it('starts at the bottom after 10 minutes, for another reason, or after an operator, an edit or a delete', () => {
    expect(startingRung(tombstone('served'), 'rate_limit', 100_000 + 10 * MINUTE + 1)).toBe(0)
    expect(startingRung(tombstone('served'), 'quota', 100_000 + MINUTE)).toBe(0)
    expect(startingRung(tombstone('operator'), 'rate_limit', 100_000 + MINUTE)).toBe(0)
    expect(startingRung(tombstone('key_edit'), 'rate_limit', 100_000 + MINUTE)).toBe(0)
    expect(startingRung(tombstone('deleted'), 'rate_limit', 100_000 + MINUTE)).toBe(0)
    expect(startingRung(undefined, 'rate_limit', 0)).toBe(0)
  })
})
