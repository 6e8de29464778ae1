import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { RouteRef } from '../adaptive/types.ts'
import { compareTrialEntries, type TrialEntry } from './entry.ts'
import { routeKey as trialKey } from '../adaptive/types.ts'
import { createTrials, type Trials } from './trials.ts'
import { TRIAL_CLAIM_LAPSE_MS, TRIAL_CLAIM_SETTLE_MS, TRIAL_FIRST_WAIT_MS, TRIAL_MAX_WAIT_MS, TRIAL_STALE_MS, TRIAL_TOP_RUNG, trialWaitMs } from './timing.ts'

const ROUTE: RouteRef = { provider: 'openai', model: 'gpt-4o', keyId: 'k1' }

/** A node that hears `peers` others. */
function node(nodeId: string, peers = 0): Trials {
  const trials = createTrials({ nodeId })
  trials.setPeers(peers)
  return trials
}

/** Every change of `from` delivered to each of `to` (a gossip round with no delay); replies of newer rounds go back to `from`. */
function gossip(from: Trials, to: readonly Trials[], now: number): void {
  const changes = from.changes()
  if (changes.length === 0) return
  for (const peer of to) {
    if (peer === from) continue
    const { newer } = peer.merge(changes, now)
    if (newer.length > 0) from.merge(newer, now)
  }
}

const roundId = (entry: TrialEntry | undefined) => (entry === undefined ? 'none' : `${entry.round.wallMs}.${entry.round.counter}.${entry.round.nodeId}`)

describe('the ladder', () => {
  it('waits 5 s before the first trial, doubling after each failed one up to 30 s', () => {
    expect([0, 1, 2, 3, 4, 9].map(trialWaitMs)).toEqual([5_000, 10_000, 20_000, 30_000, 30_000, 30_000])
    expect(trialWaitMs(TRIAL_TOP_RUNG)).toBe(TRIAL_MAX_WAIT_MS)
    expect(trialWaitMs(TRIAL_TOP_RUNG - 1)).toBeLessThan(TRIAL_MAX_WAIT_MS)
  })
})

describe('a node alone', () => {
  it('lets exactly one request through per due time: the first once due, none before, none after until it answers', () => {
    const trials = node('a')
    trials.routeFailed(ROUTE, 1_000)
    expect(trials.entry(ROUTE)).toMatchObject({ state: 'failing', rung: 0, dueAt: 1_000 + TRIAL_FIRST_WAIT_MS, claim: null })
    expect(trials.take(ROUTE, 1_000 + TRIAL_FIRST_WAIT_MS - 1)).toBe(false)
    expect(trials.take(ROUTE, 1_000 + TRIAL_FIRST_WAIT_MS)).toBe(true)
    for (let at = 6_001; at < 60_000; at += 1_000) expect(trials.take(ROUTE, at)).toBe(false)
  })

  it('climbs a rung after each failed trial, and stops trying once one is served', () => {
    const trials = node('a')
    let now = 0
    trials.routeFailed(ROUTE, now)
    const sentAt: number[] = []
    for (; now <= 120_000; now += 100) {
      if (!trials.take(ROUTE, now)) continue
      sentAt.push(now)
      trials.answered(ROUTE, now, now < 60_000 ? 'failed' : 'served', now + 50)
    }
    // Due 5 s after the failure, then 10, 20 and 30 s after each failed trial's answer; the 60 s one serves.
    expect(sentAt).toEqual([5_000, 15_100, 35_200, 65_300])
    expect(trials.entry(ROUTE)).toMatchObject({ state: 'served' })
  })

  it('a route failing again on the same node joins the round it is in; long after, it starts on the first rung', () => {
    const trials = node('a')
    trials.routeFailed(ROUTE, 0)
    expect(trials.take(ROUTE, 5_000)).toBe(true)
    trials.answered(ROUTE, 5_000, 'failed', 5_010)
    const climbed = trials.entry(ROUTE)!
    expect(climbed.rung).toBe(1)
    trials.routeFailed(ROUTE, 6_000)
    expect(trials.entry(ROUTE)).toBe(climbed)
    trials.routeFailed(ROUTE, climbed.dueAt + TRIAL_STALE_MS + 1)
    expect(trials.entry(ROUTE)).toMatchObject({ rung: 0, dueAt: climbed.dueAt + TRIAL_STALE_MS + 1 + TRIAL_FIRST_WAIT_MS })
  })

  it('frees the slot at once when the trial said nothing about the route (a cancel, never sent)', () => {
    const trials = node('a')
    trials.routeFailed(ROUTE, 0)
    expect(trials.take(ROUTE, 5_000)).toBe(true)
    trials.answered(ROUTE, 5_000, 'inconclusive', 5_020)
    expect(trials.entry(ROUTE)).toMatchObject({ rung: 0, dueAt: 5_020 })
    expect(trials.take(ROUTE, 5_030)).toBe(true)
  })

  it('counts only its own trial\'s answer: other failures on the failed route do not move the round', () => {
    const trials = node('a')
    trials.routeFailed(ROUTE, 0)
    const opened = trials.entry(ROUTE)
    trials.answered(ROUTE, 1_000, 'failed', 1_100)
    expect(trials.entry(ROUTE)).toBe(opened)
    expect(trials.take(ROUTE, 5_000)).toBe(true)
    // A request started before the trial (pinned to the route) failing is not the trial's answer.
    trials.answered(ROUTE, 4_000, 'failed', 5_050)
    expect(trials.entry(ROUTE)!.rung).toBe(0)
    trials.answered(ROUTE, 5_000, 'failed', 5_060)
    expect(trials.entry(ROUTE)!.rung).toBe(1)
  })
})

describe('a fleet', () => {
  it('lets one node send the trial of a round: the first to claim, once its claim has settled', () => {
    const [a, b, c] = [node('node-a', 2), node('node-b', 2), node('node-c', 2)]
    const all = [a, b, c]
    a.routeFailed(ROUTE, 0)
    gossip(a, all, 0)
    b.routeFailed(ROUTE, 300)
    c.routeFailed(ROUTE, 400)
    // They join node-a's round: one schedule for the fleet.
    expect(b.changes()).toEqual([])
    expect(c.entry(ROUTE)).toEqual(a.entry(ROUTE))
    // node-c's request comes first once due: it claims, and gossips the claim.
    expect(c.take(ROUTE, 5_000)).toBe(false)
    gossip(c, all, 5_002)
    // Nobody else claims a round already claimed, or sends its trial.
    for (let at = 5_003; at < 5_000 + TRIAL_CLAIM_SETTLE_MS; at += 10) {
      expect(a.take(ROUTE, at)).toBe(false)
      expect(b.take(ROUTE, at)).toBe(false)
      expect(c.take(ROUTE, at)).toBe(false)
    }
    expect(c.take(ROUTE, 5_000 + TRIAL_CLAIM_SETTLE_MS)).toBe(true)
    gossip(c, all, 5_000 + TRIAL_CLAIM_SETTLE_MS)
    for (let at = 5_300; at < 60_000; at += 10) {
      expect(a.take(ROUTE, at)).toBe(false)
      expect(b.take(ROUTE, at)).toBe(false)
    }
  })

  it('resolves claims made before their claimers heard of each other to the lowest node id', () => {
    const [a, b, c] = [node('node-a', 2), node('node-b', 2), node('node-c', 2)]
    const all = [a, b, c]
    a.routeFailed(ROUTE, 0)
    gossip(a, all, 0)
    // All three due at once, each with a request in the same few milliseconds.
    expect(c.take(ROUTE, 5_000)).toBe(false)
    expect(b.take(ROUTE, 5_001)).toBe(false)
    expect(a.take(ROUTE, 5_002)).toBe(false)
    for (const from of [c, b, a]) gossip(from, all, 5_005)
    const after = 5_002 + TRIAL_CLAIM_SETTLE_MS
    expect([a, b, c].map((trials) => trials.take(ROUTE, after))).toEqual([true, false, false])
    expect([b, c].map((trials) => trials.take(ROUTE, after + 1))).toEqual([false, false])
  })

  it('shares a failed trial: every node waits for the next rung', () => {
    const [a, b] = [node('node-a', 1), node('node-b', 1)]
    a.routeFailed(ROUTE, 0)
    gossip(a, [a, b], 0)
    b.routeFailed(ROUTE, 100)
    expect(b.take(ROUTE, 5_000)).toBe(false)
    gossip(b, [a, b], 5_000)
    expect(b.take(ROUTE, 5_300)).toBe(true)
    b.answered(ROUTE, 5_300, 'failed', 5_400)
    gossip(b, [a, b], 5_400)
    expect(a.entry(ROUTE)).toMatchObject({ state: 'failing', rung: 1, dueAt: 5_400 + trialWaitMs(1) })
    for (let at = 5_400; at < 15_400; at += 100) expect(a.take(ROUTE, at)).toBe(false)
    expect(a.take(ROUTE, 15_400)).toBe(false)
    gossip(a, [a, b], 15_400)
    expect(a.take(ROUTE, 15_400 + TRIAL_CLAIM_SETTLE_MS)).toBe(true)
  })

  it('hands the slot on when the claimer never sends its trial (its traffic went elsewhere)', () => {
    const [a, b] = [node('node-a', 1), node('node-b', 1)]
    a.routeFailed(ROUTE, 0)
    gossip(a, [a, b], 0)
    b.routeFailed(ROUTE, 0)
    expect(a.take(ROUTE, 5_000)).toBe(false)
    gossip(a, [a, b], 5_000)
    expect(b.take(ROUTE, 5_000 + TRIAL_CLAIM_LAPSE_MS - 1)).toBe(false)
    expect(b.take(ROUTE, 5_000 + TRIAL_CLAIM_LAPSE_MS)).toBe(false)
    gossip(b, [a, b], 5_000 + TRIAL_CLAIM_LAPSE_MS)
    expect(b.entry(ROUTE)!.claim).toMatchObject({ nodeId: 'node-b', generation: 2 })
    // node-a's late request does not take a slot it lost.
    expect(a.take(ROUTE, 5_000 + TRIAL_CLAIM_LAPSE_MS + TRIAL_CLAIM_SETTLE_MS)).toBe(false)
    expect(b.take(ROUTE, 5_000 + TRIAL_CLAIM_LAPSE_MS + TRIAL_CLAIM_SETTLE_MS)).toBe(true)
  })

  it('a trial already sent wins over a lower id claim that arrives after it', () => {
    const [a, c] = [node('node-a', 1), node('node-c', 1)]
    c.routeFailed(ROUTE, 0)
    gossip(c, [a, c], 0)
    expect(c.take(ROUTE, 5_000)).toBe(false)
    expect(c.take(ROUTE, 5_000 + TRIAL_CLAIM_SETTLE_MS)).toBe(true)
    // node-a claimed without hearing node-c (a slow link): node-c's trial is already out.
    expect(a.take(ROUTE, 5_100)).toBe(false)
    gossip(a, [a, c], 5_400)
    gossip(c, [a, c], 5_400)
    expect(a.take(ROUTE, 5_100 + TRIAL_CLAIM_SETTLE_MS + 100)).toBe(false)
    expect(a.entry(ROUTE)!.claim).toMatchObject({ nodeId: 'node-c', startedAt: 5_000 + TRIAL_CLAIM_SETTLE_MS })
  })

  it('a node cut off from the fleet still tries the route on its own, after the settle delay', () => {
    const cutOff = node('node-z', 4)
    cutOff.routeFailed(ROUTE, 0)
    expect(cutOff.take(ROUTE, 5_000)).toBe(false)
    expect(cutOff.take(ROUTE, 5_000 + TRIAL_CLAIM_SETTLE_MS)).toBe(true)
    // Once it sees no peers at all, it claims and sends at once.
    cutOff.answered(ROUTE, 5_250, 'failed', 5_300)
    cutOff.setPeers(0)
    expect(cutOff.take(ROUTE, 5_300 + trialWaitMs(1))).toBe(true)
  })

  it('tells a peer that is behind the newer round (a node that restarted, a partition healed)', () => {
    const [a, b] = [node('node-a', 1), node('node-b', 1)]
    a.routeFailed(ROUTE, 0)
    const old = a.changes()
    expect(a.take(ROUTE, 5_000)).toBe(false)
    a.take(ROUTE, 5_300)
    a.answered(ROUTE, 5_300, 'failed', 5_400)
    a.changes()
    b.merge(old, 5_500)
    const { newer } = a.merge(old, 5_500)
    expect(newer).toEqual([a.entry(ROUTE)])
    b.merge(newer, 5_500)
    expect(b.entry(ROUTE)).toEqual(a.entry(ROUTE))
  })

  it('sends at most one trial per round across the fleet, and as many rounds as one node alone would, whatever the node count', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 200, max: 2_000 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 0, max: TRIAL_CLAIM_SETTLE_MS / 2 - 10 }),
        fc.integer({ min: 20_000, max: 90_000 }),
        (count, gapMs, seed, delayMs, outageMs) => {
          const ids = Array.from({ length: count }, (_, index) => `node-${String.fromCharCode(97 + index)}`)
          const nodes = ids.map((id) => node(id, count - 1))
          // Messages arrive `delayMs` later (a round trip within the settle delay); a node's requests come every `gapMs` at its own phase.
          const inbox: { at: number; to: Trials; entries: TrialEntry[] }[] = []
          const send = (from: Trials, at: number) => {
            const entries = from.changes()
            if (entries.length > 0) for (const to of nodes) if (to !== from) inbox.push({ at: at + delayMs, to, entries })
          }
          const senders = new Map<string, string[]>()
          const answers: { at: number; from: Trials; startedAt: number }[] = []
          for (const trials of nodes) {
            trials.routeFailed(ROUTE, 0)
            send(trials, 0)
          }
          for (let now = 0; now <= 120_000; now += 10) {
            for (const message of inbox.filter((entry) => entry.at <= now)) {
              inbox.splice(inbox.indexOf(message), 1)
              message.to.merge(message.entries, now)
            }
            for (const answer of answers.filter((entry) => entry.at <= now)) {
              answers.splice(answers.indexOf(answer), 1)
              answer.from.answered(ROUTE, answer.startedAt, answer.startedAt < outageMs ? 'failed' : 'served', now)
              send(answer.from, now)
            }
            nodes.forEach((trials, index) => {
              if ((now + index * 37 * seed) % gapMs >= 10) return
              const round = roundId(trials.entry(ROUTE))
              if (trials.take(ROUTE, now)) {
                senders.set(round, [...(senders.get(round) ?? []), trials.nodeId])
                answers.push({ at: now + 30, from: trials, startedAt: now })
              }
              send(trials, now)
            })
          }
          for (const sent of senders.values()) expect(sent).toHaveLength(1)
          // The rounds follow the ladder: 5, 10, 20, 30, 30 ... s apart (plus a request gap and the settle delay each).
          let due = 0
          let rounds = 0
          for (let rung = 0; due < outageMs; rung = Math.min(rung + 1, TRIAL_TOP_RUNG)) {
            due += trialWaitMs(rung)
            rounds++
          }
          expect(senders.size).toBeLessThanOrEqual(rounds + 1)
          expect(senders.size).toBeGreaterThanOrEqual(Math.max(1, rounds - Math.ceil((rounds * (gapMs * 2 + TRIAL_CLAIM_SETTLE_MS)) / TRIAL_MAX_WAIT_MS) - 1))
          for (const trials of nodes) expect(trials.entry(ROUTE)!.state).toBe('served')
        },
      ),
      { numRuns: 60 },
    )
  })
})

describe('the merge', () => {
  const entry = (overrides: Partial<TrialEntry>): TrialEntry => ({ ...ROUTE, round: { wallMs: 1_000, counter: 0, nodeId: 'node-a' }, state: 'failing', rung: 0, dueAt: 6_000, claim: null, region: 'default', ...overrides })
  const claim = (nodeId: string, generation = 1, startedAt: number | null = null) => ({ nodeId, generation, at: 6_000, startedAt })

  it('orders rounds by their opening, then the claim generation, a sent trial, and the lowest node id', () => {
    expect(compareTrialEntries(entry({ round: { wallMs: 2_000, counter: 0, nodeId: 'node-z' } }), entry({ claim: claim('node-a', 3, 6_100) }))).toBeGreaterThan(0)
    expect(compareTrialEntries(entry({ claim: claim('node-b') }), entry({}))).toBeGreaterThan(0)
    expect(compareTrialEntries(entry({ claim: claim('node-c', 2) }), entry({ claim: claim('node-a', 1, 6_100) }))).toBeGreaterThan(0)
    expect(compareTrialEntries(entry({ claim: claim('node-c', 1, 6_100) }), entry({ claim: claim('node-a') }))).toBeGreaterThan(0)
    expect(compareTrialEntries(entry({ claim: claim('node-a') }), entry({ claim: claim('node-c') }))).toBeGreaterThan(0)
    expect(compareTrialEntries(entry({ claim: claim('node-a') }), entry({ claim: claim('node-a') }))).toBe(0)
  })

  it('ends every node on the same round whatever order the rounds arrive in', () => {
    const candidates = [
      entry({}),
      entry({ claim: claim('node-b') }),
      entry({ claim: claim('node-a') }),
      entry({ claim: claim('node-c', 1, 6_250) }),
      entry({ claim: claim('node-b', 2) }),
      entry({ round: { wallMs: 7_000, counter: 0, nodeId: 'node-c' }, rung: 1, dueAt: 17_000 }),
      entry({ round: { wallMs: 7_000, counter: 0, nodeId: 'node-b' }, state: 'served', dueAt: 7_000 }),
    ]
    fc.assert(
      fc.property(fc.shuffledSubarray(candidates, { minLength: 1 }), fc.shuffledSubarray(candidates, { minLength: 1 }), (left, right) => {
        const one = node('node-x')
        const other = node('node-y')
        for (const item of left) one.merge([item], 8_000)
        for (const item of right) other.merge([item], 8_000)
        one.merge(other.entries(), 8_000)
        other.merge(one.entries(), 8_000)
        expect(one.entry(ROUTE)).toEqual(other.entry(ROUTE))
      }),
    )
  })

  it('forgets rounds nobody touched for ten minutes', () => {
    const trials = node('a')
    trials.routeFailed(ROUTE, 0)
    trials.collect(9 * 60_000)
    expect(trials.entry(ROUTE)).toBeDefined()
    trials.collect(11 * 60_000)
    expect(trials.entry(ROUTE)).toBeUndefined()
    expect(trialKey('p', 'm', 'k')).toBe('p\u0000m\u0000k')
  })
})
