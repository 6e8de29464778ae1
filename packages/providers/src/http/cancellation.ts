/**
 * A cancel signal for upstream calls. Not an AbortController: on Node 20 each one costs
 * about 5 us to create (measured), more than the rest of our per-request work; undici
 * accepts any EventEmitter with `aborted` and an 'abort' event as a request signal.
 */
import { EventEmitter } from 'node:events'

/** Fired at most once; listeners added after the fact are not called, so check `aborted`. */
export class Cancellation extends EventEmitter {
  aborted = false
  reason: 'cancelled' | 'timeout' | undefined

  /** Fires 'abort' once; later calls do nothing. */
  abort(reason: 'cancelled' | 'timeout' = 'cancelled'): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.emit('abort')
  }

  /** Aborts this one when `parent` aborts; returns the function that undoes the link. */
  follow(parent: Cancellation): () => void {
    if (parent.aborted) {
      this.abort(parent.reason)
      return () => {}
    }
    const onAbort = () => this.abort(parent.reason)
    parent.once('abort', onAbort)
    return () => parent.removeListener('abort', onAbort)
  }
}
