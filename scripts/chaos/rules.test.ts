/**
 * The chaos run's rules on hand-made observations: what counts as a request sent to a held
 * key before its due time, what counts as a hold lost across a restart, how the simulator's
 * log is stitched, and which answers are clear.
 */
import { describe, expect, it } from 'vitest'
import { judgeHeldTraffic, type HoldObservation, type KeyFacts, type UpstreamRecord } from './held-traffic.ts'
import { judgeRestart, type ListedHold } from './restarts.ts'
import { stitch } from './observe.ts'
import { judgeAnswer } from './traffic.ts'

const T = 1_000_000
const keys: KeyFacts[] = [
  { provider: 'openai', id: 'k-revoked', name: 'revoked', suffix: '2222', models: ['gpt-4o'], upstreamNames: {} },
  { provider: 'openai', id: 'k-healthy', name: 'healthy', suffix: '1111', models: ['gpt-4o'], upstreamNames: {} },
  { provider: 'azure', id: 'k-azure', name: 'eu', suffix: '4444', models: ['gpt-4o'], upstreamNames: { 'gpt-4o': 'gpt-4o-prod' } },
  { provider: 'azure', id: 'k-azure-us', name: 'us', suffix: '5555', models: ['gpt-4o'], upstreamNames: { 'gpt-4o': 'gpt-4o-prod' } },
]

function seen(overrides: Partial<HoldObservation>): HoldObservation {
  return { observedAt: T + 100, nodeId: 'node-1', incarnation: 1, provider: 'openai', keyId: 'k-revoked', keyName: 'revoked', model: null, reason: 'credential', since: T, nextCheckAt: T + 30_000, rung: 0, checks: 0, ...overrides }
}

function request(at: number, overrides: Partial<UpstreamRecord> = {}): UpstreamRecord {
  return { at, provider: 'openai', key_suffix: '2222', model: 'gpt-4o', stream: false, status: 401, aborted: false, ...overrides }
}

/** One hold seen by two nodes through a 60 s run, with due times at +28 s (node-1) and +31 s (node-2). */
const heldThroughout = [
  seen({ observedAt: T + 100, nodeId: 'node-1', nextCheckAt: T + 28_000 }),
  seen({ observedAt: T + 100, nodeId: 'node-2', nextCheckAt: T + 31_000 }),
  seen({ observedAt: T + 60_000, nodeId: 'node-1', nextCheckAt: T + 28_000 }),
  seen({ observedAt: T + 60_000, nodeId: 'node-2', nextCheckAt: T + 31_000 }),
]

describe('requests sent to a held key before its due time', () => {
  it('counts a request after the hold reached the fleet and before any due time', () => {
    const verdict = judgeHeldTraffic({ observations: heldThroughout, records: [request(T + 5_000)], keys })
    expect(verdict.early).toHaveLength(1)
    expect(verdict.early[0]).toMatchObject({ keyName: 'revoked', afterSinceMs: 5_000, earliestDueAt: T + 28_000 })
  })

  it('lets one check through per node and due time, and no more', () => {
    const verdict = judgeHeldTraffic({ observations: heldThroughout, records: [request(T + 28_050), request(T + 31_020), request(T + 31_500)], keys })
    expect(verdict.checks).toBe(2)
    expect(verdict.early.map((early) => early.at)).toEqual([T + 31_500])
  })

  it('does not let a check through before the node\'s due time, even when another node is due', () => {
    const verdict = judgeHeldTraffic({ observations: heldThroughout, records: [request(T + 28_050), request(T + 29_000)], keys })
    expect(verdict.checks).toBe(1)
    expect(verdict.early).toHaveLength(1)
  })

  it('counts requests that ended within the grace after the hold began as racing it, not as early', () => {
    const verdict = judgeHeldTraffic({ observations: heldThroughout, records: [request(T - 50), request(T + 400)], keys })
    expect(verdict).toMatchObject({ raced: 1, examined: 0, early: [] })
  })

  it('stops at the request the upstream served: what follows is not held traffic', () => {
    const records = [request(T + 28_050, { status: 200 }), request(T + 28_100, { status: 200 }), request(T + 40_000, { status: 200 })]
    const verdict = judgeHeldTraffic({ observations: heldThroughout, records, keys })
    expect(verdict).toMatchObject({ examined: 1, checks: 1, early: [] })
  })

  it('finds the releasing check a poll round after the last poll that saw the hold', () => {
    const records = [request(T + 60_500, { status: 200 }), request(T + 60_600, { status: 200 })]
    const verdict = judgeHeldTraffic({ observations: heldThroughout, records, keys })
    expect(verdict).toMatchObject({ examined: 1, checks: 1, early: [] })
    expect(verdict.episodes[0]!.end).toBe(T + 60_500)
  })

  it('does not take a request served within the grace (sent before the hold) for the release', () => {
    const records = [request(T + 300, { status: 200 }), request(T + 5_000)]
    const verdict = judgeHeldTraffic({ observations: heldThroughout, records, keys })
    expect(verdict).toMatchObject({ raced: 1, examined: 1 })
    expect(verdict.early).toHaveLength(1)
  })

  it('does not let a restarted node spend the due time of a version the fleet has renewed since', () => {
    const observations = [
      ...heldThroughout,
      // node-2 checked at +31 s, was refused again: version 1 due at +91 s; node-3 came back with version 0 from an old snapshot.
      seen({ observedAt: T + 31_200, nodeId: 'node-2', checks: 1, rung: 1, nextCheckAt: T + 91_000 }),
      seen({ observedAt: T + 40_000, nodeId: 'node-3', incarnation: 2, checks: 0, nextCheckAt: T + 29_500 }),
    ]
    const verdict = judgeHeldTraffic({ observations, records: [request(T + 31_020), request(T + 40_100)], keys })
    expect(verdict.checks).toBe(1)
    expect(verdict.early.map((early) => early.at)).toEqual([T + 40_100])
  })

  it('allows a request while every key serving the model is held', () => {
    const both = [...heldThroughout, seen({ keyId: 'k-healthy', keyName: 'healthy', observedAt: T + 100 }), seen({ keyId: 'k-healthy', keyName: 'healthy', observedAt: T + 60_000 })]
    const verdict = judgeHeldTraffic({ observations: both, records: [request(T + 5_000)], keys })
    expect(verdict).toMatchObject({ everyKeyHeld: 1, early: [] })
  })

  it('counts only the held model of a model hold, by the name the upstream knows it by', () => {
    const observations = [seen({ provider: 'azure', keyId: 'k-azure', keyName: 'eu', model: 'gpt-4o', reason: 'model_access' }), seen({ provider: 'azure', keyId: 'k-azure', keyName: 'eu', model: 'gpt-4o', reason: 'model_access', observedAt: T + 60_000 })]
    const records = [request(T + 5_000, { provider: 'azure', key_suffix: '4444', model: 'gpt-4o-prod' }), request(T + 6_000, { provider: 'azure', key_suffix: '4444', model: 'other-deployment' })]
    const verdict = judgeHeldTraffic({ observations, records, keys })
    expect(verdict.examined).toBe(1)
    expect(verdict.early).toHaveLength(1)
  })
})

describe('holds lost across a restart', () => {
  const hold = (overrides: Partial<ListedHold> = {}): ListedHold => ({ provider: 'openai', keyId: 'k-revoked', keyName: 'revoked', model: null, since: T, nextCheckAt: T + 30_000, ...overrides })
  const restart = { nodeId: 'node-2', killedAt: T + 10_000, backAt: T + 14_000, snapshotAgeMs: null }

  it('is lost when the restarted node lacks a hold its peers still have', () => {
    const verdict = judgeRestart({ ...restart, before: { 'node-1': [hold()], 'node-2': [hold()] }, after: [], peersAfter: { 'node-1': [hold()] } })
    expect(verdict).toMatchObject({ nodeBefore: 1, fleetBefore: 1, nodeAfter: 0, fleetAfter: 1, lost: [{ nodeId: 'node-2', keyName: 'revoked', wasDue: false }] })
  })

  it('is lost even when the node did not have it before the kill, and marks a due one', () => {
    const verdict = judgeRestart({ ...restart, before: { 'node-1': [hold({ nextCheckAt: T + 12_000 })], 'node-2': [] }, after: [], peersAfter: { 'node-1': [hold({ nextCheckAt: T + 12_000 })] } })
    expect(verdict.lost).toEqual([{ nodeId: 'node-2', keyName: 'revoked', model: null, wasDue: true }])
  })

  it('is not lost when no peer holds it any more (released meanwhile)', () => {
    const verdict = judgeRestart({ ...restart, before: { 'node-1': [hold()], 'node-2': [hold()] }, after: [], peersAfter: { 'node-1': [] } })
    expect(verdict).toMatchObject({ releasedMeanwhile: 1, onlyOnKilledNode: 0, lost: [] })
  })

  it('counts apart a hold only the killed node knew, and a hold only the restarted node lists', () => {
    const verdict = judgeRestart({ ...restart, before: { 'node-1': [], 'node-2': [hold()] }, after: [hold({ keyId: 'k-healthy', keyName: 'healthy' })], peersAfter: { 'node-1': [] } })
    expect(verdict).toMatchObject({ releasedMeanwhile: 0, onlyOnKilledNode: 1, resurrected: 1, lost: [] })
  })

  it('is not resurrected when a peer released it between the polls and the restarted node no longer lists it a grace later', () => {
    const observed = { ...restart, before: { 'node-1': [hold()], 'node-2': [hold()] }, after: [hold()], peersAfter: { 'node-1': [] } }
    expect(judgeRestart({ ...observed, afterSettled: [] }).resurrected).toBe(0)
    expect(judgeRestart({ ...observed, afterSettled: [hold()] }).resurrected).toBe(1)
  })

  it('is not lost when the peers placed it again only as the node came back', () => {
    const verdict = judgeRestart({ ...restart, before: { 'node-1': [hold()] }, after: [], peersAfter: { 'node-1': [hold({ since: T + 13_500 })] } })
    expect(verdict.lost).toEqual([])
  })

  it('is kept when the node lists it, whatever version it restored', () => {
    const verdict = judgeRestart({ ...restart, before: { 'node-1': [hold()] }, after: [hold({ nextCheckAt: T + 29_000 })], peersAfter: { 'node-1': [hold()] } })
    expect(verdict).toMatchObject({ nodeAfter: 1, lost: [], releasedMeanwhile: 0 })
  })
})

describe('the simulator log, fetched in pieces', () => {
  const records = Array.from({ length: 8 }, (_, index) => request(T + index))

  it('adds only what follows the overlap', () => {
    expect(stitch(records.slice(0, 5), records.slice(2))).toEqual({ added: records.slice(5), gap: false })
    expect(stitch(records.slice(0, 5), records.slice(0, 5))).toEqual({ added: [], gap: false })
  })

  it('flags a gap when the ring turned over between two fetches', () => {
    expect(stitch(records.slice(0, 3), records.slice(5))).toEqual({ added: records.slice(5), gap: true })
  })
})

describe('a clear answer', () => {
  it('is a completion, a stream ending in [DONE], or an OpenAI-style JSON error', () => {
    expect(judgeAnswer(200, false, '{"choices": []}')).toEqual({ kind: 'served' })
    expect(judgeAnswer(200, true, 'data: {"choices": []}\n\ndata: [DONE]\n\n')).toEqual({ kind: 'served' })
    expect(judgeAnswer(200, true, 'data: {"error": {"message": "The upstream stream broke"}}\n\ndata: [DONE]\n\n')).toEqual({ kind: 'failed', label: 'stream_error' })
    expect(judgeAnswer(502, false, '{"error": {"message": "every key refused", "code": "upstream_credentials_exhausted"}}')).toEqual({ kind: 'failed', label: '502' })
  })

  it('is not a bare text error, a stream cut before [DONE], or a 200 without choices', () => {
    expect(judgeAnswer(500, false, 'Internal Server Error').kind).toBe('unclear')
    expect(judgeAnswer(200, true, 'data: {"choices": []}\n\n').kind).toBe('unclear')
    expect(judgeAnswer(200, false, '{}').kind).toBe('unclear')
  })
})
