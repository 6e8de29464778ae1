/**
 * Gossipsub's publish has no backpressure (a burst goes straight into every peer's stream buffer),
 * so every publish goes through this queue: bounded (full, it refuses with `queue_full`),
 * rate-limited by a token bucket, and coalescing (a newer message with the same key replaces one
 * still waiting, so a flapping state sends its latest value, not its history).
 */
import './polyfill.ts'
import { ClusterError } from './errors.ts'

/** Limits of the publish queue. */
export interface PublishQueueOptions {
  /** Messages waiting at most; one more is refused with `queue_full`. */
  maxLength: number
  /** Steady publish rate, messages per second. */
  ratePerSecond: number
  /** Messages that may go at once after a quiet spell. */
  burst: number
}

/** What the queue needs from the outside. */
export interface PublishQueueComponents {
  /** Hands one message to gossipsub. */
  send(topic: string, data: Uint8Array): Promise<void>
  /** Monotonic milliseconds. */
  now(): number
}

interface Item {
  topic: string
  data: Uint8Array
  coalesceKey: string | undefined
  waiters: PromiseWithResolvers<void>[]
}

/** A bounded, rate-limited, coalescing queue in front of gossipsub's publish. */
export class PublishQueue {
  private readonly items: Item[] = []
  private readonly byKey = new Map<string, Item>()
  private tokens: number
  private refilledAt: number
  private draining = false
  private closed = false
  private timer: NodeJS.Timeout | undefined
  private wake: (() => void) | undefined

  constructor(
    private readonly components: PublishQueueComponents,
    private readonly options: PublishQueueOptions,
  ) {
    this.tokens = options.burst
    this.refilledAt = components.now()
  }

  /** Messages waiting to be sent. */
  get length(): number {
    return this.items.length
  }

  /** Queues a message; resolves once gossipsub took it (or a newer one with the same coalesce key that replaced it). */
  enqueue(topic: string, data: Uint8Array, coalesceKey?: string): Promise<void> {
    if (this.closed) return Promise.reject(new ClusterError('stopped', 'the cluster is stopped'))
    const waiter = Promise.withResolvers<void>()
    const key = coalesceKey === undefined ? undefined : `${topic}\u0000${coalesceKey}`
    const waiting = key === undefined ? undefined : this.byKey.get(key)
    if (waiting !== undefined) {
      waiting.data = data
      waiting.waiters.push(waiter)
      return waiter.promise
    }
    if (this.items.length >= this.options.maxLength) {
      return Promise.reject(new ClusterError('queue_full', `publish queue full (${this.options.maxLength} waiting)`, { retryable: true }))
    }
    const item: Item = { topic, data, coalesceKey: key, waiters: [waiter] }
    this.items.push(item)
    if (key !== undefined) this.byKey.set(key, item)
    void this.drain()
    return waiter.promise
  }

  /** Refuses new messages and fails the waiting ones with `stopped`. */
  close(): void {
    this.closed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.wake?.()
    for (const item of this.items.splice(0)) {
      for (const waiter of item.waiters) waiter.reject(new ClusterError('stopped', 'the cluster stopped before the message was sent'))
    }
    this.byKey.clear()
  }

  private async drain(): Promise<void> {
    if (this.draining) return
    this.draining = true
    try {
      while (!this.closed && this.items.length > 0) {
        // Checked synchronously, so a message sent at once never counts against the bound.
        if (!this.takeToken()) {
          await this.waitForToken()
          continue
        }
        const item = this.items.shift()!
        if (item.coalesceKey !== undefined) this.byKey.delete(item.coalesceKey)
        try {
          await this.components.send(item.topic, item.data)
          for (const waiter of item.waiters) waiter.resolve()
        } catch (error) {
          for (const waiter of item.waiters) waiter.reject(error)
        }
      }
    } finally {
      this.draining = false
    }
  }

  /** Takes a token if one is there; refills by the time passed since the last look. */
  private takeToken(): boolean {
    const now = this.components.now()
    this.tokens = Math.min(this.options.burst, this.tokens + ((now - this.refilledAt) * this.options.ratePerSecond) / 1000)
    this.refilledAt = now
    if (this.tokens < 1) return false
    this.tokens -= 1
    return true
  }

  private async waitForToken(): Promise<void> {
    const waitMs = Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.options.ratePerSecond))
    await new Promise<void>((resolve) => {
      this.wake = resolve
      this.timer = setTimeout(resolve, waitMs)
    })
    this.wake = undefined
    this.timer = undefined
  }
}
