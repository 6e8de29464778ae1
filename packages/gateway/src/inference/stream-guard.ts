/**
 * A stream on its way to the caller, with its deadlines (issue 35): the first-chunk gate reads up
 * to the first content event before anything goes out, bounded by the first-token deadline, so
 * what fails before that fails over like any attempt; the idle deadline cuts a silent stream at
 * any point. It reports how the stream ended exactly once.
 */
import type { AttemptFailure, TokenUsage } from '@switchboard/routing'
import { carriesContent, StreamFailure, streamFailureOf, StreamUsage, type StreamFormat } from '@switchboard/providers'

export interface StreamGuardInit {
  /** Longest silence inside the stream before it counts as stalled. */
  idleMs: number
  now: () => number
  attempt: GuardedAttempt
}

/** What the guard tells the attempt a stream belongs to (an object, so no closure is made per stream). */
export interface GuardedAttempt {
  /** Aborts the upstream call: a deadline passed. */
  abort(): void
  /** Told once how the stream ended (null when served whole) and the token counts it reported. */
  ended(failure: AttemptFailure | null, usage: TokenUsage | null): void
}

/** The ending of a stream the caller left: nobody's fault. */
export const CALLER_LEFT: AttemptFailure = Object.freeze({ failureClass: 'cancelled', scope: 'model', status: 0, waitHintMs: null, message: 'the caller left during the stream', code: null })

/** A deadline inside a stream passed: a timeout of the route, never the caller's fault. */
export function deadlineFailure(kind: 'first_token' | 'stream_idle', ms: number): AttemptFailure {
  const message = kind === 'first_token' ? `no content within ${ms} ms of the attempt's start (first-token deadline)` : `the stream sent nothing for ${ms} ms (stream idle deadline)`
  return { failureClass: 'timeout', scope: 'model', status: 200, waitHintMs: null, message, code: kind === 'first_token' ? 'first_token_timeout' : 'stream_idle_timeout' }
}

const DONE: Promise<IteratorResult<string>> = Promise.resolve({ value: undefined, done: true })

/**
 * The streams in flight, watched for silence by one timer for the node (one per stream cost more
 * garbage collection than the rest of the guard): a silent stream is cut within WATCH_EVERY_MS of its deadline.
 */
const open = new Set<GuardedStream>()
let watcher: NodeJS.Timeout | null = null
const WATCH_EVERY_MS = 250

function watchAll(): void {
  for (const stream of open) stream.watch()
  if (open.size === 0 && watcher !== null) {
    clearInterval(watcher)
    watcher = null
  }
}

/**
 * The guarded events of one stream. A class with bound handlers rather than a generator: one
 * per stream, and no promise or closure per event beyond the upstream's own.
 */
export class GuardedStream implements AsyncIterableIterator<string> {
  private readonly inner: AsyncIterator<string>
  /** Events the gate read, replayed first. */
  private held: string[] | null = null
  private heldAt = 0
  /** When the pending read started; -1 while none is pending. */
  private waitingSince = -1
  private expired: AttemptFailure | null = null
  private finished = false
  private exhausted = false
  /** The token counts the stream's events report (the balancer's and the gateway key's tokens). */
  readonly usage = new StreamUsage()

  /** The upstream read's handlers, bound once (methods, not arrow fields: tsx names every closure it makes). */
  private readonly onStep: (step: IteratorResult<string>) => IteratorResult<string>
  private readonly onError: (error: unknown) => never

  constructor(events: AsyncIterable<string>, private readonly init: StreamGuardInit) {
    this.inner = events[Symbol.asyncIterator]()
    this.onStep = this.stepped.bind(this)
    this.onError = this.failed.bind(this)
    open.add(this)
    if (watcher === null) {
      watcher = setInterval(watchAll, WATCH_EVERY_MS)
      watcher.unref()
    }
  }

  /**
   * Reads up to the first content event (kept, and replayed to the caller later). Resolves to
   * null once content came (or the stream ended whole), or to the failure that ended it first:
   * `firstTokenMs` (from now) passing, silence, a cut, a malformed event, the caller leaving.
   */
  async gate(format: StreamFormat, firstTokenMs: number | null): Promise<AttemptFailure | null> {
    const held: string[] = []
    const timer = firstTokenMs === null ? null : setTimeout(() => this.expire(deadlineFailure('first_token', firstTokenMs)), Math.max(0, firstTokenMs))
    try {
      for (;;) {
        const step = await this.next()
        if (step.done === true) break
        held.push(step.value)
        if (carriesContent(format, step.value)) break
      }
    } catch (error) {
      return error instanceof StreamFailure ? error.failure : streamFailureOf(error)
    } finally {
      if (timer !== null) clearTimeout(timer)
    }
    this.held = held
    this.heldAt = 0
    return null
  }

  next(): Promise<IteratorResult<string>> {
    const held = this.held
    if (held !== null) {
      if (this.heldAt < held.length) return Promise.resolve({ value: held[this.heldAt++]!, done: false })
      this.held = null
    }
    if (this.exhausted) return DONE
    this.waitingSince = this.init.now()
    return this.inner.next().then(this.onStep, this.onError)
  }

  return(): Promise<IteratorResult<string>> {
    this.held = null
    this.exhausted = true
    this.finish(CALLER_LEFT)
    const inner = this.inner
    return inner.return ? inner.return().then(() => ({ value: undefined, done: true as const })) : DONE
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  /** The watcher's tick: a read pending for longer than the idle deadline ends the stream. */
  watch(): void {
    if (this.waitingSince >= 0 && this.expired === null && this.init.now() - this.waitingSince >= this.init.idleMs) {
      this.expire(deadlineFailure('stream_idle', this.init.idleMs))
    }
  }

  private expire(failure: AttemptFailure): void {
    if (this.finished || this.expired !== null) return
    this.expired = failure
    // The pending read rejects with the abort; onError reports the deadline instead.
    this.init.attempt.abort()
  }

  private stepped(step: IteratorResult<string>): IteratorResult<string> {
    this.waitingSince = -1
    if (step.done !== true) this.usage.read(step.value)
    else {
      this.exhausted = true
      this.finish(null)
    }
    return step
  }

  private failed(error: unknown): never {
    this.waitingSince = -1
    this.exhausted = true
    const failure = this.expired ?? (error instanceof StreamFailure ? error.failure : streamFailureOf(error))
    this.finish(failure)
    throw error instanceof StreamFailure && failure === error.failure ? error : new StreamFailure(failure)
  }

  private finish(failure: AttemptFailure | null): void {
    if (this.finished) return
    this.finished = true
    open.delete(this)
    this.init.attempt.ended(failure, this.usage.usage)
  }
}
