import { describe, expect, it } from 'vitest'
import { createWriteQueue, isUnreachable, type WriteQueueStatus } from './queue.ts'

function refused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:54329'), { code: 'ECONNREFUSED' })
}

describe('write queue', () => {
  it('retries an unreachable database until the write lands, reporting degraded meanwhile', async () => {
    const queue = createWriteQueue({ retryDelayMs: 1 })
    let attempts = 0
    let seenWhileFailing: WriteQueueStatus | undefined
    const landed = queue.enqueue('save settings', async () => {
      attempts += 1
      if (attempts === 3) seenWhileFailing = queue.status()
      if (attempts < 4) throw refused()
      return 'saved'
    })
    const next = queue.enqueue('second write', async () => 'second')
    await expect(landed).resolves.toBe('saved')
    await expect(next).resolves.toBe('second')
    expect(seenWhileFailing).toEqual({ healthy: false, reason: expect.stringContaining('ECONNREFUSED'), pending: 2 })
    expect(queue.status()).toEqual({ healthy: true, pending: 0 })
  })

  it('lands writes in the order they were queued', async () => {
    const queue = createWriteQueue({ retryDelayMs: 1 })
    const order: string[] = []
    let failFirst = true
    const writes = ['a', 'b', 'c'].map((name) =>
      queue.enqueue(name, async () => {
        if (name === 'a' && failFirst) {
          failFirst = false
          throw refused()
        }
        order.push(name)
      }),
    )
    await Promise.all(writes)
    expect(order).toEqual(['a', 'b', 'c'])
  })

  it('rejects a write the database refuses, without retrying it or blocking the rest', async () => {
    const queue = createWriteQueue({ retryDelayMs: 1 })
    let attempts = 0
    const refusedWrite = queue.enqueue('bad row', async () => {
      attempts += 1
      throw Object.assign(new Error('duplicate key'), { code: '23505' })
    })
    const after = queue.enqueue('good row', async () => 'ok')
    await expect(refusedWrite).rejects.toMatchObject({ code: '23505' })
    await expect(after).resolves.toBe('ok')
    expect(attempts).toBe(1)
    expect(queue.status().healthy).toBe(true)
  })

  it('rejects what is pending when closed', async () => {
    const queue = createWriteQueue({ retryDelayMs: 1 })
    const stuck = queue.enqueue('never lands', async () => {
      throw refused()
    })
    queue.close()
    await expect(stuck).rejects.toThrow(/closed/)
    await queue.drained()
    expect(queue.status().pending).toBe(0)
  })
})

describe('isUnreachable', () => {
  it('tells a database that is away from one that refuses', () => {
    expect(isUnreachable(refused())).toBe(true)
    expect(isUnreachable(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toBe(true)
    expect(isUnreachable(Object.assign(new Error('connection failure'), { code: '08006' }))).toBe(true)
    expect(isUnreachable(new Error('Connection terminated unexpectedly'))).toBe(true)
    expect(isUnreachable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false)
    expect(isUnreachable(Object.assign(new Error('no provider'), { code: 'provider_not_found' }))).toBe(false)
    expect(isUnreachable(new TypeError('a bug'))).toBe(false)
  })
})
