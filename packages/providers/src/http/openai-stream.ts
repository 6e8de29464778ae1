/** OpenAI-shaped SSE streams: the chunk JSON of each `data:` line, up to `[DONE]`. */
import { asRecord, parseObject } from '../anthropic/messages.ts'
import { attemptFailure } from '../errors/classify.ts'
import { SseParser } from './sse.ts'
import type { StreamFormat } from '../streams/content.ts'
import { StreamFailure, streamFailureOf, UpstreamStreamError } from './stream-failure.ts'

/** The error an in-band error event stands for. */
function streamError(data: string): UpstreamStreamError {
  const error = asRecord(parseObject(data)?.error)
  const code = error?.code ?? error?.type
  // Data that is not JSON is its own message.
  return new UpstreamStreamError(typeof error?.message === 'string' ? error.message : data, typeof code === 'string' ? code : null)
}

/** True when the last event (or, for chat, the one before it) ends a complete stream of this format; a body ending before that was cut. */
function endsComplete(ending: StreamFormat, last: string | null, previous: string | null): boolean {
  if (last === null) return false
  if (ending === 'messages') return last.includes('"message_stop"')
  if (ending === 'responses') return /"response\.(completed|incomplete|failed)"/.test(last)
  // A usage-only chunk may follow the one that finished.
  return FINISHED.test(last) || (previous !== null && FINISHED.test(previous))
}

/** A chat chunk that gives a finish reason. */
const FINISHED = /"finish_reason":\s*"/

/** True when the data of an event reads as one JSON object at a glance (a full parse costs more than the whole relay). */
function looksLikeObject(data: string): boolean {
  let last = data.length - 1
  while (last > 0 && (data.charCodeAt(last) === 0x20 || data.charCodeAt(last) === 0x0a || data.charCodeAt(last) === 0x0d || data.charCodeAt(last) === 0x09)) last--
  return data.charCodeAt(0) === 0x7b && data.charCodeAt(last) === 0x7d
}

/** How many parsed chunks may wait for the consumer before the upstream is paused. */
const HIGH_WATER = 64

/**
 * The chunks of an OpenAI-shaped stream, fed by the transport's data callbacks through a
 * synchronous SSE parser into a queue (no async generator hops). Yields each chunk's JSON text up
 * to `[DONE]`; rejects with a StreamFailure on an in-band error or a failed transport.
 */
export class OpenAiChunkQueue implements AsyncIterableIterator<string> {
  private readonly parser = new SseParser((event, data) => this.onEvent(event, data))
  private queue: string[] = []
  private head = 0
  private done = false
  private failure: Error | null = null
  private waiting: { resolve: (result: IteratorResult<string>) => void; reject: (error: Error) => void } | null = null
  /** Set by the transport: resume a paused upstream, and cancel it when the consumer stops early. */
  resume: () => void = noop
  cancel: () => void = noop
  private paused = false
  private last: string | null = null
  private previous: string | null = null

  constructor(private readonly ending: StreamFormat = 'chat') {}

  /** A packet of the body; returns false when the upstream should pause. */
  push(chunk: Uint8Array): boolean {
    if (this.done) return true
    this.parser.push(chunk)
    if (this.queue.length - this.head >= HIGH_WATER) this.paused = true
    return !this.paused
  }

  /** The body ended: complete when its last event says so, cut otherwise (see `endsComplete`). */
  end(): void {
    if (this.done) return
    this.parser.end()
    if (this.done) return
    if (endsComplete(this.ending, this.last, this.previous)) return this.finish(null)
    const what = this.ending === 'chat' ? 'data: [DONE]' : this.ending === 'messages' ? 'message_stop' : 'response.completed'
    this.finish(new StreamFailure(attemptFailure('transient', 200, `the stream broke: the upstream closed the stream before ${what}`, 'stream_truncated')))
  }

  /** The body failed: the consumer gets `error` after the chunks already queued. */
  fail(error: Error): void {
    if (this.done) return
    this.finish(new StreamFailure(streamFailureOf(error)))
  }

  next(): Promise<IteratorResult<string>> {
    if (this.head < this.queue.length) {
      const value = this.queue[this.head++]!
      if (this.head === this.queue.length) {
        this.queue = []
        this.head = 0
      }
      if (this.paused && this.queue.length - this.head < HIGH_WATER / 2) {
        this.paused = false
        this.resume()
      }
      return Promise.resolve({ value, done: false })
    }
    if (this.failure !== null) {
      const failure = this.failure
      this.failure = null
      return Promise.reject(failure)
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true })
    if (this.paused) {
      this.paused = false
      this.resume()
    }
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }))
  }

  /** The consumer stopped early (`break`): the upstream call is cancelled. */
  return(): Promise<IteratorResult<string>> {
    if (!this.done) {
      this.done = true
      this.queue = []
      this.head = 0
      this.cancel()
    }
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  private onEvent(event: string | undefined, data: string): void {
    if (this.done) return
    if (data === '[DONE]') return this.finish(null)
    if (event === 'error' || data.startsWith('{"error"')) return this.finish(new StreamFailure(streamFailureOf(streamError(data))))
    if (!looksLikeObject(data)) {
      return this.finish(new StreamFailure(attemptFailure('unknown', 200, `the stream broke: an event is not a JSON object: ${data.slice(0, 120)}`, 'upstream_malformed')))
    }
    this.previous = this.last
    this.last = data
    const waiting = this.waiting
    if (waiting !== null) {
      this.waiting = null
      waiting.resolve({ value: data, done: false })
    } else this.queue.push(data)
  }

  private finish(error: Error | null): void {
    this.done = true
    const waiting = this.waiting
    this.waiting = null
    if (waiting === null) {
      this.failure = error
      return
    }
    // Nothing is queued while someone waits: settle the waiter at once.
    if (error !== null) waiting.reject(error)
    else waiting.resolve({ value: undefined, done: true })
  }
}

function noop(): void {}
