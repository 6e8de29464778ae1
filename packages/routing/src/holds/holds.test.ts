import { describe, expect, it } from 'vitest'
import type { AttemptFailure, FailureClass } from '../failures/failure-class.ts'
import { createHolds, type Holds } from './holds.ts'
import type { AttemptAnswer } from './settle.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND

function failure(failureClass: FailureClass, options: Partial<AttemptFailure> = {}): AttemptFailure {
  const scope = failureClass === 'credential' ? 'key' : 'model'
  return { failureClass, scope, status: 400, waitHintMs: null, message: `refused: ${failureClass}`, code: null, ...options }
}

/** A node whose jitter factor is exactly 1, so every due time is waitStartedAt + base wait. */
function node(nodeId = 'node-a'): Holds {
  return createHolds({ nodeId, random: () => 0.5 })
}

/** An answer; a check unless `route.check` says otherwise (a check answered after the hold's wait began is what renews it). */
function answer(startedAt: number, now: number, outcome: AttemptFailure | null, route: Partial<AttemptAnswer> = {}): AttemptAnswer {
  return { provider: 'azure', keyId: 'k1', model: 'gpt-4o', startedAt, now, failure: outcome, check: true, ...route }
}

/** Places a hold at t = 1000 and returns its entry. */
function heldAt1000(holds: Holds, outcome: AttemptFailure) {
  const settlement = holds.recordAnswer(answer(900, 1_000, outcome))
  return settlement.changed[0]!
}

describe('what holds a key', () => {
  it('holds the whole key for a rejected credential, and only the model for a missing deployment', () => {
    const holds = node()
    holds.recordAnswer(answer(0, 1, failure('credential')))
    holds.recordAnswer(answer(0, 1, failure('model_access'), { keyId: 'k2' }))
    expect(holds.isHeld('azure', 'k1', 'gpt-4o')).toBe(true)
    expect(holds.isHeld('azure', 'k1', 'gpt-4o-mini')).toBe(true)
    expect(holds.isHeld('azure', 'k2', 'gpt-4o')).toBe(true)
    expect(holds.isHeld('azure', 'k2', 'gpt-4o-mini')).toBe(false)
  })

  it('holds the whole key for a quota the provider states at the account level', () => {
    const holds = node()
    holds.recordAnswer(answer(0, 1, failure('quota', { scope: 'key', status: 402 })))
    expect(holds.isHeld('azure', 'k1', 'o3')).toBe(true)
  })

  it('never holds for transient failures, request errors, unknown failures, timeouts or cancels', () => {
    const holds = node()
    for (const failureClass of ['transient', 'caller_fault', 'unknown', 'timeout', 'cancelled'] as const) {
      expect(holds.recordAnswer(answer(0, 1, failure(failureClass))).changed).toEqual([])
    }
    expect(holds.isHeld('azure', 'k1', 'gpt-4o')).toBe(false)
    expect(holds.entries()).toEqual([])
  })
})

describe('refusals already in flight', () => {
  it('do not lengthen a new hold', () => {
    const holds = node()
    const placed = heldAt1000(holds, failure('rate_limit'))
    const late = holds.recordAnswer(answer(950, 1_100, failure('rate_limit')))
    expect(late).toEqual({ changed: [], events: [] })
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toEqual(placed)
  })

  it('do not lengthen a hold that a failed check just renewed', () => {
    const holds = node()
    heldAt1000(holds, failure('rate_limit'))
    const due = 1_000 + 30 * SECOND
    holds.recordAnswer(answer(due, due + 10, failure('rate_limit')))
    // Sent after the hold began but before the renewal: it was in flight when the key was held again.
    holds.recordAnswer(answer(due - 5, due + 20, failure('rate_limit')))
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toMatchObject({ rung: 1, checks: 1, waitStartedAt: due + 10 })
  })

  it('cannot hold a key edited after they were sent', () => {
    const holds = node()
    holds.keyEdited('azure', 'k1', 500)
    expect(holds.recordAnswer(answer(400, 600, failure('credential'))).changed).toEqual([])
    expect(holds.recordAnswer(answer(501, 600, failure('credential'))).changed).toHaveLength(1)
  })
})

describe('the check', () => {
  it('lets exactly one request per node through when the key is due; the others keep skipping it', () => {
    const holds = node()
    heldAt1000(holds, failure('credential'))
    const due = 1_000 + 30 * SECOND
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', due - 1)).toBe(false)
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', due)).toBe(true)
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', due + 1)).toBe(false)
    // A whole-key hold has one slot, whichever model the check is for.
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o-mini', due + 1)).toBe(false)
    expect(holds.isHeld('azure', 'k1', 'gpt-4o')).toBe(true)
    expect(holds.dueKeys('azure', 'gpt-4o', due + 1)).toEqual([])
  })

  it('frees the slot of a check that never reports back after 5 minutes, not before', () => {
    const holds = node()
    heldAt1000(holds, failure('model_gone'))
    const due = 1_000 + 30 * SECOND
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', due)).toBe(true)
    // A cancelled check does not report: the slot stays taken.
    expect(holds.recordAnswer(answer(due, due + 1, failure('cancelled'))).changed).toEqual([])
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', due + 5 * MINUTE - 1)).toBe(false)
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', due + 5 * MINUTE)).toBe(true)
  })

  it('needs every hold covering the route to be due, and takes the slot of each', () => {
    const holds = node()
    heldAt1000(holds, failure('rate_limit'))
    // A credential refusal stops short of the rate limit: the model hold renews at 30 s, the key is held for 60 s.
    holds.recordAnswer(answer(2_000, 10_000, failure('credential', { waitHintMs: 60 * SECOND })))
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', 45_000)).toBe(false)
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o-mini', 45_000)).toBe(false)
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', 70_000)).toBe(true)
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o-mini', 70_000)).toBe(false)
  })
})

describe('the check answer, row by row', () => {
  const due = 1_000 + 30 * SECOND

  it('the key serves: the hold is released and the caller is told to move the route to recovering', () => {
    const holds = node()
    heldAt1000(holds, failure('model_access'))
    const settlement = holds.recordAnswer(answer(due, due + 300, null))
    expect(settlement.events).toMatchObject([{ kind: 'released', cause: 'served' }])
    expect(settlement.changed).toMatchObject([{ state: 'released', releaseCause: 'served', releasedAt: due + 300, checks: 1 }])
    expect(holds.isHeld('azure', 'k1', 'gpt-4o')).toBe(false)
    expect(holds.conditions()).toEqual([])
  })

  it('the same refusal: held again on the next rung, with the provider words of the new answer', () => {
    const holds = node()
    heldAt1000(holds, failure('region_blocked'))
    const settlement = holds.recordAnswer(answer(due, due + 300, failure('region_blocked', { message: 'still blocked' })))
    expect(settlement.events).toMatchObject([{ kind: 'renewed', outcome: 'refused_again' }])
    expect(settlement.changed[0]).toMatchObject({ rung: 1, baseWaitMs: 60 * SECOND, checks: 1, since: 1_000, waitStartedAt: due + 300, message: 'still blocked' })
  })

  it('a 429 from a key held for a rejected credential: released, and the rate limit held on its own', () => {
    const holds = node()
    heldAt1000(holds, failure('credential'))
    const settlement = holds.recordAnswer(answer(due, due + 300, failure('rate_limit')))
    expect(settlement.events).toMatchObject([
      { kind: 'released', cause: 'settled', entry: { model: null, reason: 'credential' } },
      { kind: 'placed', entry: { model: 'gpt-4o', reason: 'rate_limit', rung: 0 } },
    ])
    expect(holds.isHeld('azure', 'k1', 'gpt-4o-mini')).toBe(false)
    expect(holds.isHeld('azure', 'k1', 'gpt-4o')).toBe(true)
  })

  it('an answer further along on the same model replaces the hold with a fresh one for the new reason', () => {
    const holds = node()
    heldAt1000(holds, failure('model_access'))
    const settlement = holds.recordAnswer(answer(due, due + 300, failure('rate_limit')))
    expect(settlement.events.map((event) => event.kind)).toEqual(['released', 'placed'])
    expect(settlement.changed).toHaveLength(1)
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toMatchObject({ reason: 'rate_limit', rung: 0, since: due + 300, checks: 0 })
  })

  it('a refusal short of the held question leaves that hold on the same rung and is held on its own', () => {
    const holds = node()
    heldAt1000(holds, failure('rate_limit'))
    const settlement = holds.recordAnswer(answer(due, due + 300, failure('credential')))
    expect(settlement.events).toMatchObject([
      { kind: 'renewed', outcome: 'inconclusive', entry: { model: 'gpt-4o', rung: 0 } },
      { kind: 'placed', entry: { model: null, reason: 'credential' } },
    ])
  })

  for (const failureClass of ['transient', 'timeout', 'unknown'] as const) {
    it(`a ${failureClass} answer: held again on the same rung, the answer says nothing about the key`, () => {
      const holds = node()
      heldAt1000(holds, failure('quota'))
      holds.recordAnswer(answer(due, due + 1, failure('quota')))
      const renewedAt = due + 1 + 60 * SECOND
      const settlement = holds.recordAnswer(answer(renewedAt, renewedAt + 5, failure(failureClass, { status: 503, message: 'upstream sad' })))
      expect(settlement.events).toMatchObject([{ kind: 'renewed', outcome: 'inconclusive' }])
      expect(settlement.changed[0]).toMatchObject({ rung: 1, baseWaitMs: 60 * SECOND, checks: 2, waitStartedAt: renewedAt + 5, message: 'refused: quota' })
    })
  }

  it('any other request that reaches the key, such as a pinned one, settles the hold the same way', () => {
    const holds = node()
    heldAt1000(holds, failure('credential'))
    // Not due yet and no slot claimed: a request pinned to the key still answers the question.
    const settlement = holds.recordAnswer(answer(5_000, 5_200, null, { model: 'gpt-4o-mini' }))
    expect(settlement.events).toMatchObject([{ kind: 'released', cause: 'served' }])
    expect(holds.isHeld('azure', 'k1', 'gpt-4o')).toBe(false)
  })

  it('a success sent before the hold began does not release it', () => {
    const holds = node()
    heldAt1000(holds, failure('credential'))
    expect(holds.recordAnswer(answer(999, 1_500, null)).changed).toEqual([])
    expect(holds.isHeld('azure', 'k1', 'gpt-4o')).toBe(true)
  })
})

describe('the resumed rung', () => {
  function climbToRungTwoThenServe(holds: Holds): number {
    heldAt1000(holds, failure('rate_limit'))
    holds.recordAnswer(answer(31_000, 31_000, failure('rate_limit')))
    holds.recordAnswer(answer(91_000, 91_000, failure('rate_limit')))
    holds.recordAnswer(answer(211_000, 211_000, null))
    return 211_000
  }

  it('resumes the rung when a served key is refused again for the same reason within 10 minutes', () => {
    const holds = node()
    const releasedAt = climbToRungTwoThenServe(holds)
    const settlement = holds.recordAnswer(answer(releasedAt + 9 * MINUTE, releasedAt + 10 * MINUTE, failure('rate_limit')))
    expect(settlement.changed[0]).toMatchObject({ rung: 2, baseWaitMs: 120 * SECOND, checks: 0 })
  })

  it('starts again at 30 s after 10 minutes', () => {
    const holds = node()
    const releasedAt = climbToRungTwoThenServe(holds)
    const settlement = holds.recordAnswer(answer(releasedAt + 10 * MINUTE, releasedAt + 10 * MINUTE + 1, failure('rate_limit')))
    expect(settlement.changed[0]).toMatchObject({ rung: 0, baseWaitMs: 30 * SECOND })
  })

  it('starts again at 30 s after an operator release, even one made after the key already served', () => {
    const holds = node()
    const releasedAt = climbToRungTwoThenServe(holds)
    expect(holds.clear({ provider: 'azure' }, releasedAt + 1)).toMatchObject({ cleared: [], count: 0 })
    const settlement = holds.recordAnswer(answer(releasedAt + 2, releasedAt + 3, failure('rate_limit')))
    expect(settlement.changed[0]).toMatchObject({ rung: 0 })
  })

  it('starts again at 30 s after a key edit', () => {
    const holds = node()
    const releasedAt = climbToRungTwoThenServe(holds)
    holds.keyEdited('azure', 'k1', releasedAt + 1)
    const settlement = holds.recordAnswer(answer(releasedAt + 2, releasedAt + 3, failure('rate_limit')))
    expect(settlement.changed[0]).toMatchObject({ rung: 0 })
  })
})

describe('key edits and deletes', () => {
  it('a key edit releases every hold of the key, for every model', () => {
    const holds = node()
    holds.recordAnswer(answer(0, 1, failure('model_access')))
    holds.recordAnswer(answer(0, 1, failure('model_gone'), { model: 'gpt-4' }))
    holds.recordAnswer(answer(0, 1, failure('rate_limit'), { keyId: 'k2' }))
    const changed = holds.keyEdited('azure', 'k1', 10)
    expect(changed.map((entry) => [entry.model, entry.releaseCause])).toEqual([
      ['gpt-4o', 'key_edit'],
      ['gpt-4', 'key_edit'],
    ])
    expect(holds.conditions().map((condition) => condition.key_id)).toEqual(['k2'])
  })

  it('a provider delete removes the holds of all its keys, leaving no rung to resume', () => {
    const holds = node()
    holds.recordAnswer(answer(0, 1, failure('credential')))
    holds.recordAnswer(answer(0, 1, failure('credential'), { provider: 'openai' }))
    holds.providerDeleted('azure', 10)
    expect(holds.conditions().map((condition) => condition.provider)).toEqual(['openai'])
    expect(holds.recordAnswer(answer(5, 20, failure('credential'))).changed).toEqual([])
  })
})

describe('key delete', () => {
  it('removes the holds of the key and keeps in-flight refusals from holding it again', () => {
    const holds = node()
    holds.recordAnswer(answer(0, 1, failure('quota')))
    holds.recordAnswer(answer(0, 1, failure('quota'), { keyId: 'k2' }))
    expect(holds.keyDeleted('azure', 'k1', 10).map((entry) => entry.releaseCause)).toEqual(['deleted'])
    expect(holds.conditions().map((condition) => condition.key_id)).toEqual(['k2'])
    expect(holds.recordAnswer(answer(5, 20, failure('quota'))).changed).toEqual([])
  })
})

describe('every key held', () => {
  it('tells provider selection which keys are held and which one it may check', () => {
    const holds = node()
    holds.recordAnswer(answer(0, 0, failure('credential')))
    holds.recordAnswer(answer(0, 10 * SECOND, failure('rate_limit'), { keyId: 'k2' }))
    expect(['k1', 'k2', 'k3'].map((keyId) => holds.isHeld('azure', keyId, 'gpt-4o'))).toEqual([true, true, false])
    expect(holds.dueKeys('azure', 'gpt-4o', 0)).toEqual([])
    expect(holds.dueKeys('azure', 'gpt-4o', 30 * SECOND)).toEqual(['k1'])
    expect(holds.dueKeys('azure', 'gpt-4o', 40 * SECOND)).toEqual(['k1', 'k2'])
  })
})

describe('across nodes', () => {
  it('a failed check on one node moves the rung on the other and frees its slot', () => {
    const nodeA = node('node-a')
    const nodeB = node('node-b')
    nodeB.merge(nodeA.recordAnswer(answer(0, 1_000, failure('credential'))).changed, 1_000)
    const due = 31_000
    expect(nodeA.claimCheck('azure', 'k1', 'gpt-4o', due)).toBe(true)
    expect(nodeB.claimCheck('azure', 'k1', 'gpt-4o', due)).toBe(true)
    const renewed = nodeB.recordAnswer(answer(due, due + 100, failure('credential'))).changed
    nodeA.merge(renewed, due + 150)
    const [route] = nodeA.holdsOn('azure', 'k1', 'gpt-4o')
    expect(route!.entry).toMatchObject({ rung: 1, checks: 1 })
    expect(route!.checkClaimedAt).toBeNull()
    // Node A's own check, still in flight when B renewed the hold, cannot climb it again.
    expect(nodeA.recordAnswer(answer(due, due + 200, failure('credential'))).changed).toEqual([])
  })

  it('two sides of a partition that each climbed the same hold keep the higher rung when they meet, whichever climbed last', () => {
    const nodeA = node('node-a')
    const nodeB = node('node-b')
    nodeB.merge(nodeA.recordAnswer(answer(0, 1_000, failure('region_blocked'))).changed, 1_000)
    // Split. A's checks fail twice (at 31 s, then 60 s later); B's once, after both of A's.
    nodeA.recordAnswer(answer(31_000, 31_100, failure('region_blocked')))
    nodeA.recordAnswer(answer(91_100, 91_200, failure('region_blocked')))
    nodeB.recordAnswer(answer(95_000, 95_100, failure('region_blocked')))
    expect([nodeA.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry.rung, nodeB.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry.rung]).toEqual([2, 1])
    // Heal: each pulls the other's set.
    const [fromA, fromB] = [nodeA.entries(), nodeB.entries()]
    nodeA.merge(fromB, 96_000)
    nodeB.merge(fromA, 96_000)
    for (const side of [nodeA, nodeB]) expect(side.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toMatchObject({ rung: 2, baseWaitMs: 120 * SECOND })
    expect(nodeA.digest()).toEqual(nodeB.digest())
  })

  it('a hold placed after a release starts after it, even on a node whose clock is behind the one that placed the first', () => {
    const ahead = node('node-a')
    const behind = node('node-b')
    // node-a's clock is a minute ahead of node-b's: its hold starts at its 61 s.
    behind.merge(ahead.recordAnswer(answer(60_000, 61_000, failure('model_gone'))).changed, 1_000)
    // An operator releases it on node-b at node-b's 2 s.
    ahead.merge(behind.clear({}, 2_000).changed, 62_000)
    expect(ahead.isHeld('azure', 'k1', 'gpt-4o')).toBe(false)
    // node-b, at its own 3 s, is refused again: held, and the hold wins over the release everywhere.
    const again = behind.recordAnswer(answer(2_500, 3_000, failure('model_gone'))).changed
    expect(again[0]).toMatchObject({ state: 'held', since: 61_001 })
    expect(behind.isHeld('azure', 'k1', 'gpt-4o')).toBe(true)
    ahead.merge(again, 62_500)
    expect(ahead.isHeld('azure', 'k1', 'gpt-4o')).toBe(true)
  })

  it('a release on any node releases everywhere', () => {
    const nodeA = node('node-a')
    const nodeB = node('node-b')
    nodeB.merge(nodeA.recordAnswer(answer(0, 1_000, failure('model_gone'))).changed, 1_000)
    nodeA.merge(nodeB.recordAnswer(answer(2_000, 2_100, null)).changed, 2_200)
    expect(nodeA.isHeld('azure', 'k1', 'gpt-4o')).toBe(false)
    expect(nodeA.digest()).toEqual(nodeB.digest())
  })
})

describe('conditions', () => {
  it('lists each active hold with the key name, the provider words and this node next check', () => {
    const holds = node()
    holds.recordAnswer(answer(0, Date.UTC(2025, 0, 1), failure('credential', { message: 'Incorrect API key provided' })))
    const names = (provider: string, keyId: string) => (keyId === 'k1' ? `${provider}-prod` : undefined)
    expect(holds.conditions(names)).toEqual([
      {
        provider: 'azure',
        key_id: 'k1',
        key_name: 'azure-prod',
        model: null,
        reason: 'credential',
        message: 'Incorrect API key provided',
        since: '2025-01-01T00:00:00.000Z',
        next_check_at: '2025-01-01T00:00:30.000Z',
        rung: 0,
        checks: 0,
      },
    ])
  })
})

describe('only a failed check moves a key up the ladder (issue 36, item 6)', () => {
  const notCheck = { check: false }

  it("a request's own retries on the key it just held leave the hold on its first rung; the check when due climbs exactly one", () => {
    const holds = node()
    const placed = heldAt1000(holds, failure('rate_limit'))
    // The same request retries the key (max_retries), each retry refused the same way, within a second.
    for (const sentAt of [1_100, 1_400, 1_900]) expect(holds.recordAnswer(answer(sentAt, sentAt + 50, failure('rate_limit'), notCheck))).toEqual({ changed: [], events: [] })
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toEqual(placed)
    expect(holds.conditions()).toMatchObject([{ rung: 0, checks: 0 }])
    const due = holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.dueAt
    expect(holds.claimCheck('azure', 'k1', 'gpt-4o', due)).toBe(true)
    const check = holds.recordAnswer(answer(due, due + 50, failure('rate_limit')))
    expect(check.events).toMatchObject([{ kind: 'renewed', outcome: 'refused_again' }])
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toMatchObject({ rung: 1, checks: 1, baseWaitMs: 60 * SECOND })
    expect(holds.conditions()).toMatchObject([{ rung: 1, checks: 1 }])
  })

  it('requests sent anyway while every key is held, before it is due, neither climb nor restart a provider-stated wait', () => {
    const holds = node()
    const placed = heldAt1000(holds, failure('rate_limit', { waitHintMs: 30 * SECOND }))
    expect(holds.recordAnswer(answer(1_200, 1_300, failure('rate_limit', { waitHintMs: 30 * SECOND }), notCheck)).changed).toEqual([])
    expect(holds.recordAnswer(answer(20_000, 20_100, failure('rate_limit', { waitHintMs: 30 * SECOND }), notCheck)).changed).toEqual([])
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toEqual(placed)
    const settlement = holds.recordAnswer(answer(31_000, 31_100, failure('rate_limit', { waitHintMs: 30 * SECOND })))
    expect(settlement.changed[0]).toMatchObject({ rung: 1, checks: 1, baseWaitMs: 30 * SECOND, waitStartedAt: 31_100 })
  })

  it('an inconclusive answer (a 503) that is not a check renews nothing either', () => {
    const holds = node()
    const placed = heldAt1000(holds, failure('quota'))
    expect(holds.recordAnswer(answer(2_000, 2_100, failure('transient', { status: 503 }), notCheck)).changed).toEqual([])
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o')[0]!.entry).toEqual(placed)
  })

  it('a refusal short of the held question from a request that is not a check is held on its own, leaving the held one alone', () => {
    const holds = node()
    const placed = heldAt1000(holds, failure('rate_limit'))
    const settlement = holds.recordAnswer(answer(2_000, 2_100, failure('credential'), notCheck))
    expect(settlement.events).toMatchObject([{ kind: 'placed', entry: { model: null, reason: 'credential' } }])
    expect(holds.holdsOn('azure', 'k1', 'gpt-4o').find((route) => route.entry.model === 'gpt-4o')!.entry).toEqual(placed)
  })

  it('any request the key serves still releases it, check or not', () => {
    const holds = node()
    heldAt1000(holds, failure('rate_limit'))
    expect(holds.recordAnswer(answer(1_500, 1_600, null, notCheck)).events).toMatchObject([{ kind: 'released', cause: 'served' }])
  })
})
