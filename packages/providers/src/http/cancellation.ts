/**
 * A cancel signal for upstream calls: not an AbortController (~5 us each on Node 20, and a request
 * makes two). undici takes any object with `aborted`, `on` (checked for), `once` and `removeListener`.
 */

type Listener = () => void

/** Fired at most once; listeners added after the fact are not called, so check `aborted`. */
export class Cancellation {
  aborted = false
  reason: 'cancelled' | 'timeout' | undefined = undefined
  private listeners: Listener[] | null = null
  /** Cancellations that abort when this one does (`follow`). */
  private followers: Cancellation[] | null = null

  /** Fires 'abort' once: listeners first, then followers; later calls do nothing. */
  abort(reason: 'cancelled' | 'timeout' = 'cancelled'): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const listeners = this.listeners
    const followers = this.followers
    this.listeners = null
    this.followers = null
    if (listeners !== null) for (const listener of listeners) listener()
    if (followers !== null) for (const follower of followers) follower.abort(reason)
  }

  /** Calls `listener` once when this aborts (the only event there is). */
  once(event: 'abort', listener: Listener): this {
    if (event === 'abort' && !this.aborted) (this.listeners ??= []).push(listener)
    return this
  }

  /** Same as `once`: 'abort' fires at most once. */
  on(event: 'abort', listener: Listener): this {
    return this.once(event, listener)
  }

  removeListener(event: 'abort', listener: Listener): this {
    if (event === 'abort' && this.listeners !== null) remove(this.listeners, listener)
    return this
  }

  /** How many listeners wait for 'abort' (for tests: a finished request leaves none behind). */
  listenerCount(event: 'abort'): number {
    return event === 'abort' ? (this.listeners?.length ?? 0) + (this.followers?.length ?? 0) : 0
  }

  /** Aborts this one, with the same reason, when `parent` aborts; undo with `unfollow`. */
  follow(parent: Cancellation): void {
    if (parent.aborted) this.abort(parent.reason)
    else (parent.followers ??= []).push(this)
  }

  /** Undoes `follow(parent)`; safe to call more than once. */
  unfollow(parent: Cancellation): void {
    if (parent.followers !== null) remove(parent.followers, this)
  }
}

function remove<T>(list: T[], item: T): void {
  const index = list.indexOf(item)
  if (index < 0) return
  if (index === list.length - 1) list.pop()
  else list.splice(index, 1)
}
