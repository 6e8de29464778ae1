/**
 * Per-key requests and tokens per minute, across the fleet (issue 13). Requests: the lowest
 * node id alive owns every key's count for a window and leases it out a few requests at a time
 * (a quarter of what is left, split by the nodes, at least one), so the fleet admits at most the
 * limit; when the owner misses three lease requests in a row, a node admits its own share
 * (limit / nodes). Tokens, known once an answer is in: each node gossips its count, and a key
 * is refused once the fleet's count for the window reaches its limit.
 */
import type { GatewayKey } from './gateway-keys.ts'
import type { CallerTokenUsage, LeaseRequest } from '../fleet/messages.ts'

/** Production window: one minute. */
export const LIMIT_WINDOW_MS = 60_000

/** What the limiter needs of the fleet (absent or alone: this node owns every count). */
export interface LimitPeers {
  /** The owner of the counts, or null when it is this node (or there is no fleet). */
  owner(): string | null
  /** Live nodes, this one included. */
  nodes(): number
  /** Asks the owner for a lease; resolves with how many requests it granted. */
  lease(owner: string, request: LeaseRequest): Promise<number>
  /** Tells the fleet this node's token count of a key for a window. */
  publishTokens(usage: CallerTokenUsage): void
}

/** A gateway key as the limiter (and a sibling asking for a count) knows it. */
export type LimitedKey = Pick<GatewayKey, 'id' | 'name' | 'requestsPerMinute' | 'tokensPerMinute'>

/** Why a key was refused. */
export type LimitRefusal = { reason: 'requests' | 'tokens'; limit: number; retryAfterSeconds: number }

interface Lease {
  window: number
  allowance: number
  exhausted: boolean
  /** Requests admitted from this node's own share while the owner could not be asked. */
  alone: number
  /** Lease requests in a row that failed. */
  failures: number
  pending: Promise<void> | null
}

/** Lease requests that must fail in a row before the owner counts as unreachable. */
const LEASE_TRIES = 3

export class KeyLimiter {
  private peers: LimitPeers | null = null
  private readonly granted = new Map<string, { window: number; total: number }>()
  private readonly leases = new Map<string, Lease>()
  private readonly ownTokens = new Map<string, { window: number; tokens: number }>()
  private readonly peerTokens = new Map<string, Map<string, { window: number; tokens: number }>>()

  constructor(private readonly init: { now: () => number; windowMs?: number; onLeaseError?: (error: unknown) => void }) {}

  get windowMs(): number {
    return this.init.windowMs ?? LIMIT_WINDOW_MS
  }

  /** Connects the limiter to the fleet once it runs. */
  setPeers(peers: LimitPeers): void {
    this.peers = peers
  }

  /** null when the key may send one more request now (counted), else why not. Synchronous unless a lease must be asked for. */
  admit(key: LimitedKey): LimitRefusal | null | Promise<LimitRefusal | null> {
    if (key.requestsPerMinute === null && key.tokensPerMinute === null) return null
    const now = this.init.now()
    const window = Math.floor(now / this.windowMs)
    if (key.tokensPerMinute !== null && this.tokensUsed(key.id, window) >= key.tokensPerMinute) return this.refusal('tokens', key.tokensPerMinute, window, now)
    const limit = key.requestsPerMinute
    if (limit === null) return null
    const owner = this.peers?.owner() ?? null
    if (owner === null) return this.grant(key.id, window, limit, 1) === 1 ? null : this.refusal('requests', limit, window, now)
    return this.fromLease(key.id, limit, owner).then((admitted) => (admitted ? null : this.refusal('requests', limit, this.windowOf(), this.init.now())))
  }

  /** The owner's side: grants up to a share of what is left of the window's limit. */
  grant(keyId: string, window: number, limit: number, want?: number): number {
    let count = this.granted.get(keyId)
    if (count === undefined || count.window !== window) {
      if (count !== undefined && count.window > window) return 0
      count = { window, total: 0 }
      this.granted.set(keyId, count)
    }
    const left = limit - count.total
    if (left <= 0) return 0
    const share = want ?? Math.max(1, Math.floor(left / (4 * Math.max(1, this.peers?.nodes() ?? 1))))
    const given = Math.min(left, share)
    count.total += given
    return given
  }

  /** Adds the tokens an answer used (after it is in) and tells the fleet. */
  recordTokens(key: LimitedKey, tokens: number): void {
    if (key.tokensPerMinute === null || !(tokens > 0)) return
    const window = this.windowOf()
    let own = this.ownTokens.get(key.id)
    if (own === undefined || own.window !== window) {
      own = { window, tokens: 0 }
      this.ownTokens.set(key.id, own)
    }
    own.tokens += tokens
    this.peers?.publishTokens({ key_id: key.id, window, tokens: own.tokens })
  }

  peerUsage(nodeId: string, usage: CallerTokenUsage): void {
    let byNode = this.peerTokens.get(usage.key_id)
    if (byNode === undefined) this.peerTokens.set(usage.key_id, (byNode = new Map()))
    const known = byNode.get(nodeId)
    if (known === undefined || known.window < usage.window || (known.window === usage.window && known.tokens < usage.tokens)) byNode.set(nodeId, { window: usage.window, tokens: usage.tokens })
  }

  private tokensUsed(keyId: string, window: number): number {
    const own = this.ownTokens.get(keyId)
    let total = own !== undefined && own.window === window ? own.tokens : 0
    const byNode = this.peerTokens.get(keyId)
    if (byNode !== undefined) for (const usage of byNode.values()) if (usage.window === window) total += usage.tokens
    return total
  }

  private async fromLease(keyId: string, limit: number, owner: string): Promise<boolean> {
    for (;;) {
      let lease = this.leases.get(keyId)
      const window = this.windowOf()
      if (lease === undefined || lease.window !== window) {
        lease = { window, allowance: 0, exhausted: false, alone: 0, failures: 0, pending: null }
        this.leases.set(keyId, lease)
      }
      if (lease.allowance > 0) {
        lease.allowance--
        return true
      }
      if (lease.exhausted) return false
      if (lease.pending === null) {
        const asked = lease
        asked.pending = this.peers!.lease(owner, { key_id: keyId, window, limit }).then(
          (granted) => {
            asked.failures = 0
            if (granted > 0) asked.allowance += granted
            else asked.exhausted = true
          },
          (error: unknown) => {
            // Only an owner that failed LEASE_TRIES times in a row is gone: then this node's own share.
            if (++asked.failures < LEASE_TRIES) return
            this.init.onLeaseError?.(error)
            const share = Math.ceil(limit / Math.max(1, this.peers?.nodes() ?? 1))
            const left = share - asked.alone
            if (left > 0) {
              asked.allowance += left
              asked.alone += left
            } else asked.exhausted = true
          },
        )
        void asked.pending.finally(() => {
          asked.pending = null
        })
      }
      await lease.pending
    }
  }

  private windowOf(): number {
    return Math.floor(this.init.now() / this.windowMs)
  }

  private refusal(reason: LimitRefusal['reason'], limit: number, window: number, now: number): LimitRefusal {
    return { reason, limit, retryAfterSeconds: Math.max(1, Math.ceil(((window + 1) * this.windowMs - now) / 1000)) }
  }
}
