import { describe, expect, it } from 'vitest'
import type { AttemptFailure, FailureClass } from '../failures/failure-class.ts'
import { HoldClearError } from './clear.ts'
import { createHolds, type Holds } from './holds.ts'

function refuse(holds: Holds, provider: string, keyId: string, model: string, failureClass: FailureClass): void {
  const failure: AttemptFailure = {
    failureClass,
    scope: failureClass === 'credential' ? 'key' : 'model',
    status: 401,
    waitHintMs: null,
    message: 'refused',
    code: null,
  }
  holds.recordAnswer({ provider, keyId, model, startedAt: 0, now: 1_000, failure, check: false })
}

/** The reference's example: a rejected key, and one model of another key. */
function referenceFleet(): Holds {
  const holds = createHolds({ nodeId: 'node-a', random: () => 0.5 })
  refuse(holds, 'openai', 'key-uuid', 'gpt-4o', 'credential')
  refuse(holds, 'openai', 'other-key-uuid', 'gpt-4o', 'model_access')
  return holds
}

function clearError(run: () => unknown): HoldClearError {
  try {
    run()
  } catch (error) {
    if (error instanceof HoldClearError) return error
    throw error
  }
  throw new Error('expected a HoldClearError')
}

describe('clear field rules', () => {
  it('refuses key_id without provider', () => {
    const error = clearError(() => referenceFleet().clear({ keyId: 'key-uuid' }, 2_000))
    expect(error).toMatchObject({ code: 'invalid_clear_request', field: 'key_id' })
    expect(error.message).toMatch(/key_id requires provider/)
  })

  it('refuses model without both provider and key_id', () => {
    expect(clearError(() => referenceFleet().clear({ model: 'gpt-4o' }, 2_000)).field).toBe('model')
    expect(clearError(() => referenceFleet().clear({ provider: 'openai', model: 'gpt-4o' }, 2_000)).message).toMatch(/model requires provider and key_id/)
  })

  it('refuses empty strings', () => {
    expect(clearError(() => referenceFleet().clear({ provider: ' ' }, 2_000)).field).toBe('provider')
  })

  it('releases nothing when it refuses', () => {
    const holds = referenceFleet()
    clearError(() => holds.clear({ keyId: 'key-uuid' }, 2_000))
    expect(holds.conditions()).toHaveLength(2)
  })
})

describe('clear', () => {
  it('with no fields releases everything, naming a whole-key hold by key id and a model hold by route', () => {
    const holds = referenceFleet()
    const { cleared, count } = holds.clear({}, 2_000)
    expect({ cleared, count }).toEqual({ cleared: ['key-uuid', 'openai:lb-identifier:gpt-4o:lb-identifier:other-key-uuid'], count: 2 })
    expect(holds.conditions()).toEqual([])
  })

  it('counts a whole-key hold once, however many models it covered', () => {
    const holds = referenceFleet()
    expect(holds.clear({ provider: 'openai', keyId: 'key-uuid' }, 2_000)).toMatchObject({ cleared: ['key-uuid'], count: 1 })
  })

  it('releases a whole-key hold only by naming the key without a model', () => {
    const holds = referenceFleet()
    expect(holds.clear({ provider: 'openai', keyId: 'key-uuid', model: 'gpt-4o' }, 2_000)).toMatchObject({ cleared: [], count: 0 })
    expect(holds.isHeld('openai', 'key-uuid', 'gpt-4o')).toBe(true)
  })

  it('releases one model of a key and leaves its other holds', () => {
    const holds = referenceFleet()
    refuse(holds, 'openai', 'other-key-uuid', 'gpt-4', 'model_gone')
    const result = holds.clear({ provider: 'openai', keyId: 'other-key-uuid', model: 'gpt-4o' }, 2_000)
    expect(result).toMatchObject({ cleared: ['openai:lb-identifier:gpt-4o:lb-identifier:other-key-uuid'], count: 1 })
    expect(holds.isHeld('openai', 'other-key-uuid', 'gpt-4')).toBe(true)
  })

  it('limits the release to one provider', () => {
    const holds = referenceFleet()
    refuse(holds, 'azure', 'key-uuid', 'gpt-4o', 'credential')
    expect(holds.clear({ provider: 'azure' }, 2_000)).toMatchObject({ cleared: ['key-uuid'], count: 1 })
    expect(holds.conditions().map((condition) => condition.provider)).toEqual(['openai', 'openai'])
  })

  it('answers 0 when nothing named was held, for example a second release of the same key', () => {
    const holds = referenceFleet()
    holds.clear({ provider: 'openai', keyId: 'key-uuid' }, 2_000)
    expect(holds.clear({ provider: 'openai', keyId: 'key-uuid' }, 3_000)).toMatchObject({ cleared: [], count: 0 })
  })

  it('hands back tombstones that release the same holds on every other node', () => {
    const holds = referenceFleet()
    const peer = createHolds({ nodeId: 'node-b', random: () => 0.5 })
    peer.merge(holds.entries(), 1_500)
    const { changed } = holds.clear({}, 2_000)
    peer.merge(changed, 2_100)
    expect(peer.conditions()).toEqual([])
    expect(peer.digest()).toEqual(holds.digest())
  })
})
