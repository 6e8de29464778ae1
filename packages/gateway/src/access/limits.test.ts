import { describe, expect, it } from 'vitest'
import type { GatewayKey } from './gateway-keys.ts'
import { KeyLimiter, type LimitPeers } from './limits.ts'

const key = (requestsPerMinute: number | null, tokensPerMinute: number | null = null): GatewayKey => ({ id: 'gk_1', name: 'app', providers: null, models: null, requestsPerMinute, tokensPerMinute })

/** Three limiters wired as a fleet in one process: the first owns the counts. */
function fleet(nodes: number, options: { ownerDown?: boolean } = {}) {
  let now = 120_000
  const limiters = Array.from({ length: nodes }, () => new KeyLimiter({ now: () => now, windowMs: 60_000 }))
  limiters.forEach((limiter, index) => {
    const peers: LimitPeers = {
      owner: () => (index === 0 ? null : 'owner'),
      nodes: () => nodes,
      lease: async (_owner, request) => {
        if (options.ownerDown) throw new Error('owner unreachable')
        return limiters[0]!.grant(request.key_id, request.window, request.limit)
      },
      publishTokens: (usage) => limiters.forEach((other, otherIndex) => otherIndex !== index && other.peerUsage(`node-${index}`, usage)),
    }
    limiter.setPeers(peers)
  })
  return { limiters, advance: (ms: number) => (now += ms) }
}

const admitted = async (limiter: KeyLimiter, gatewayKey: GatewayKey) => (await limiter.admit(gatewayKey)) === null

describe('KeyLimiter', () => {
  it('admits exactly the limit across the fleet in a window, however the requests are spread, then a new window', async () => {
    const { limiters, advance } = fleet(3)
    const limited = key(60)
    const results = await Promise.all(Array.from({ length: 300 }, (_, index) => admitted(limiters[index % 3]!, limited)))
    expect(results.filter(Boolean).length).toBe(60)
    advance(60_000)
    expect(await admitted(limiters[1]!, limited)).toBe(true)
  })

  it('lets one busy node use the whole limit while the others are idle, within its leases', async () => {
    const { limiters } = fleet(3)
    let served = 0
    for (let index = 0; index < 100; index++) if (await admitted(limiters[2]!, key(60))) served++
    expect(served).toBe(60)
  })

  it('asks again when a lease request fails, and falls back to its own share only when the owner keeps failing', async () => {
    const { limiters } = fleet(3, { ownerDown: true })
    let served = 0
    for (let index = 0; index < 100; index++) if (await admitted(limiters[1]!, key(60))) served++
    expect(served).toBe(20)
  })

  it('refuses a key once the fleet used its tokens per minute, with a retry-after to the window end', async () => {
    const { limiters } = fleet(2)
    const limited = key(null, 100)
    expect(limiters[1]!.admit(limited)).toBeNull()
    limiters[0]!.recordTokens(limited, 60)
    limiters[1]!.recordTokens(limited, 50)
    const refusal = limiters[0]!.admit(limited)
    expect(refusal).toEqual({ reason: 'tokens', limit: 100, retryAfterSeconds: 60 })
  })

  it('leaves keys without limits alone', () => {
    expect(fleet(1).limiters[0]!.admit(key(null))).toBeNull()
  })
})
