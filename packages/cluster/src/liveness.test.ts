import type { Connection } from '@libp2p/interface'
import { describe, expect, it } from 'vitest'
import { Liveness } from './liveness.ts'
import type { LivenessNode } from './liveness.ts'

/** A stand-in connection whose muxer answers pings (or not) and reads ping frames like yamux. */
function connection(id: string, direction: 'inbound' | 'outbound', answers = true, withFrameHook = true) {
  const state = { pings: 0, aborted: undefined as Error | undefined }
  const muxer: Record<string, unknown> = {
    ping: async ({ signal }: { signal: AbortSignal }) => {
      state.pings++
      if (answers) return 1
      await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('ping timed out'))))
      return 0
    },
  }
  if (withFrameHook) muxer.handlePing = () => {}
  const value = {
    id,
    direction,
    status: 'open',
    muxer,
    remotePeer: { toString: () => `peer-${id}` },
    abort(error: Error) {
      state.aborted = error
      value.status = 'closed'
    },
  }
  /** What yamux does when the peer's ping frame arrives. */
  const peerPings = () => (muxer.handlePing as (header: unknown) => void)({ flag: 1 })
  return { connection: value as unknown as Connection, state, peerPings }
}

function nodeWith(connections: Connection[]): LivenessNode {
  return { getConnections: () => connections, services: { ping: { ping: async () => 1 } } }
}

const options = { everyMs: 10_000, timeoutMs: 10_000 }

describe('connection liveness', () => {
  it('pings only the connections this node dialled, every 10 s; the dialled side sends none', async () => {
    const dialled = connection('out', 'outbound')
    const accepted = connection('in', 'inbound')
    let now = 0
    const liveness = new Liveness(nodeWith([dialled.connection, accepted.connection]), options, () => {}, () => now)
    for (; now <= 60_000; now += liveness.tickMs) {
      accepted.peerPings()
      liveness.round()
      await Promise.resolve()
    }
    expect(liveness.tickMs).toBe(2_500)
    expect(dialled.state.pings).toBe(7)
    expect(accepted.state.pings).toBe(0)
    expect(accepted.state.aborted).toBeUndefined()
    liveness.stop()
  })

  it('closes an accepted connection whose peer stopped pinging for 20 s, and not before', () => {
    const accepted = connection('in', 'inbound')
    let now = 0
    const log: string[] = []
    const liveness = new Liveness(nodeWith([accepted.connection]), options, (message) => log.push(message), () => now)
    liveness.round()
    accepted.peerPings()
    for (now = 2_500; now < 20_000; now += 2_500) liveness.round()
    expect(accepted.state.aborted).toBeUndefined()
    now = 20_000
    liveness.round()
    expect(accepted.state.aborted?.message).toMatch(/no ping from the peer for 20000 ms/)
    expect(log).toEqual(["a connection's peer stopped pinging: closing it"])
    liveness.stop()
  })

  it('closes a dialled connection whose peer does not answer within the timeout', async () => {
    const dialled = connection('out', 'outbound', false)
    const liveness = new Liveness(nodeWith([dialled.connection]), { everyMs: 40, timeoutMs: 20 }, () => {})
    liveness.round()
    await expect.poll(() => dialled.state.aborted?.message, { timeout: 5_000 }).toBe('ping timed out')
    liveness.stop()
  })

  it('pings from both sides where the muxer does not let ping frames be watched', async () => {
    const accepted = connection('in', 'inbound', true, false)
    let now = 0
    const liveness = new Liveness(nodeWith([accepted.connection]), options, () => {}, () => now)
    for (; now <= 20_000; now += liveness.tickMs) {
      liveness.round()
      await Promise.resolve()
    }
    expect(accepted.state.pings).toBe(3)
    expect(accepted.state.aborted).toBeUndefined()
    liveness.stop()
  })
})
