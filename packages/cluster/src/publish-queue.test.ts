import { describe, expect, it } from 'vitest'
import { ClusterError } from './errors.ts'
import { PublishQueue } from './publish-queue.ts'

/** A queue whose sends stay pending until the test lets them go. */
function setup(options = { maxLength: 3, ratePerSecond: 1_000_000, burst: 1_000 }) {
  const sent: string[] = []
  const gates: Array<() => void> = []
  const queue = new PublishQueue(
    {
      send: async (topic, data) => {
        await new Promise<void>((resolve) => gates.push(resolve))
        sent.push(`${topic}:${new TextDecoder().decode(data)}`)
      },
      now: () => performance.now(),
    },
    options,
  )
  /** Lets `count` sends through, one at a time, waiting for each to be asked for. */
  const release = async (count: number): Promise<void> => {
    for (let index = 0; index < count; index++) {
      while (gates.length === 0) await new Promise((resolve) => setImmediate(resolve))
      gates.shift()!()
    }
  }
  return { queue, sent, release }
}
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

describe('publish queue', () => {
  it('sends in order and resolves each publish once gossipsub took it', async () => {
    const { queue, sent, release } = setup()
    const first = queue.enqueue('t', bytes('1'))
    const second = queue.enqueue('t', bytes('2'))
    await release(2)
    await Promise.all([first, second])
    expect(sent).toEqual(['t:1', 't:2'])
  })

  it('refuses with queue_full instead of growing past its bound', async () => {
    const { queue, release } = setup()
    const accepted = [queue.enqueue('t', bytes('in flight')), queue.enqueue('t', bytes('1')), queue.enqueue('t', bytes('2')), queue.enqueue('t', bytes('3'))]
    const refused = queue.enqueue('t', bytes('4'))
    await expect(refused).rejects.toMatchObject({ code: 'queue_full', retryable: true })
    expect(queue.length).toBe(3)
    await release(4)
    await Promise.all(accepted)
  })

  it('coalesces waiting messages with the same key, latest wins, and resolves every caller', async () => {
    const { queue, sent, release } = setup()
    const inFlight = queue.enqueue('t', bytes('k=0'), 'k')
    const waiting = [queue.enqueue('t', bytes('k=1'), 'k'), queue.enqueue('t', bytes('other'), 'j'), queue.enqueue('t', bytes('k=2'), 'k'), queue.enqueue('u', bytes('k on u'), 'k')]
    await release(4)
    await Promise.all([inFlight, ...waiting])
    expect(sent).toEqual(['t:k=0', 't:k=2', 't:other', 'u:k on u'])
  })

  it('paces sends to its rate once the burst is spent', async () => {
    let now = 0
    const sent: number[] = []
    const queue = new PublishQueue({ send: async () => void sent.push(now), now: () => now }, { maxLength: 10, ratePerSecond: 1_000, burst: 2 })
    const all = [1, 2, 3].map((index) => queue.enqueue('t', bytes(String(index))))
    await new Promise((resolve) => setImmediate(resolve))
    expect(sent).toEqual([0, 0])
    now = 1
    await Promise.all(all)
    expect(sent).toEqual([0, 0, 1])
  })

  it('fails waiting messages with stopped when closed, and refuses new ones', async () => {
    const { queue } = setup()
    const inFlight = queue.enqueue('t', bytes('in flight'))
    const waiting = queue.enqueue('t', bytes('waiting'))
    queue.close()
    await expect(waiting).rejects.toBeInstanceOf(ClusterError)
    await expect(queue.enqueue('t', bytes('late'))).rejects.toMatchObject({ code: 'stopped' })
    void inFlight.catch(() => {})
  })
})
