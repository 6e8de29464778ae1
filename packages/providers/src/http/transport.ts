/** The HTTP layer every adapter shares: undici keep-alive pools, header flattening, failure reading. */
import { Readable } from 'node:stream'
import { Agent, errors, type Dispatcher } from 'undici'
import { classifyFailure } from '../errors/classify.ts'
import type { AttemptFailed, AttemptRequest } from '../types.ts'
import type { Cancellation } from './cancellation.ts'

/** One keep-alive pool per upstream origin, owned by one provider; connecting gives up after 5 s unless network_config says (undici's own is 10 s). */
export function createDispatcher(network: { connect_timeout_in_seconds?: number } = {}): Agent {
  return new Agent({
    connect: { timeout: network.connect_timeout_in_seconds !== undefined ? network.connect_timeout_in_seconds * 1000 : 5_000 },
    // No cap: over HTTP/1.1 a stream holds its connection to the end, and a cap queued every stream
    // past it behind the others. `server.max_connections` on the caller's side bounds connections.
    connections: null,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    // The gateway enforces its own per-attempt deadline through the abort signal.
    headersTimeout: 0,
    bodyTimeout: 0,
  })
}

/** A request to an upstream, on its attempt's signal and trace context. */
export interface UpstreamRequest extends Pick<AttemptRequest, 'signal' | 'traceparent'> {
  origin: string
  path: string
  headers: Record<string, string>
  body: string
}

/** `own` plus the provider's extra headers (ours win); not a spread, which costs ~0.4 us a property on Node 20. */
export function withExtraHeaders(own: Record<string, string>, extra: Readonly<Record<string, string>> | undefined): Record<string, string> {
  if (extra !== undefined) {
    for (const name in extra) if (!(name in own)) own[name] = extra[name]!
  }
  return own
}

/** An upstream answer read by the transport's own handler (see `postBuffered`). */
export interface StreamingResponse {
  statusCode: number
  /** Lower-cased names, repeated values joined with ", "; on a 2xx read whole, only the rate-limit headers. */
  headers: Record<string, string>
  /** Null for a 2xx stream (its body goes to the sink). */
  body: Buffer | null
}

/** A whole upstream answer: what a non-streaming attempt reads. */
export type BufferedResponse = StreamingResponse & { body: Buffer }

/**
 * Sends a POST and reads the whole answer, through undici's dispatcher with a small handler of
 * its own: `request()` wraps every answer in a Readable stream and an async resource, which cost
 * more CPU than the gateway's routing (measured). Network errors and aborts reject as undici's.
 */
export function postBuffered(dispatcher: Dispatcher, request: UpstreamRequest): Promise<BufferedResponse> {
  return postStreaming(dispatcher, request, null) as Promise<BufferedResponse>
}

/** Where a streamed body goes: what the transport feeds, and the hooks it sets for flow control. */
export interface StreamSink {
  /** A packet of the body; false asks the transport to pause the upstream until `resume`. */
  push(chunk: Buffer): boolean
  end(): void
  fail(error: Error): void
  resume: () => void
  cancel: () => void
}

/** A sink whose body is a Readable, read as undici's own bodies are: what a translated stream reads (SSE, or AWS event-stream frames). */
export class ReadableSink implements StreamSink {
  resume: () => void = () => {}
  cancel: () => void = () => {}
  private ended = false
  /** Reading pulls a paused upstream on; a reader that stops early (destroying the body) cancels the upstream call. */
  readonly body = new Readable({
    read: () => this.resume(),
    destroy: (error, callback) => {
      if (!this.ended) this.cancel()
      callback(error)
    },
  })

  push(chunk: Buffer): boolean {
    return this.body.push(chunk)
  }

  end(): void {
    this.ended = true
    this.body.push(null)
  }

  fail(error: Error): void {
    this.ended = true
    // A body nobody reads (any more) must not throw its error at the process, as undici's own do not.
    this.body.on('error', () => {}).destroy(error)
  }
}

/**
 * Sends a POST whose 2xx answer is a stream: resolves at the headers and feeds the body to
 * `sink` packet by packet (undici's pause/resume for backpressure); a failure is read whole.
 */
export function postStreaming(dispatcher: Dispatcher, request: UpstreamRequest, sink: StreamSink | null): Promise<StreamingResponse> {
  return new Promise((resolve, reject) => {
    const handler = new PostHandler(request.signal, sink, resolve, reject)
    if (request.signal.aborted) return handler.onError(new errors.RequestAbortedError())
    // The headers are the attempt's own object: its traceparent goes on them in place.
    if (request.traceparent !== undefined) request.headers.traceparent = request.traceparent
    dispatcher.dispatch({ origin: request.origin, path: request.path, method: 'POST', headers: request.headers, body: request.body }, handler)
  })
}

/** undici's callback-style handler: reads the whole answer, or with a sink passes a 2xx body on and resolves at the headers. */
class PostHandler implements Dispatcher.DispatchHandler {
  private abortUpstream: ((reason?: Error) => void) | null = null
  private statusCode = 0
  private headers: Record<string, string> = {}
  private streaming = false
  private readonly chunks: Buffer[] = []
  private size = 0
  private finished = false
  private readonly onCancel: () => void

  constructor(private readonly signal: Cancellation, private readonly sink: StreamSink | null, private readonly resolve: (response: StreamingResponse) => void, private readonly reject: (error: Error) => void) {
    this.onCancel = () => this.abortUpstream?.(new errors.RequestAbortedError())
    signal.once('abort', this.onCancel)
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.signal.aborted) abort(new errors.RequestAbortedError())
    else this.abortUpstream = abort
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[] | string[] | null, resume: () => void): boolean {
    // 1xx answers (100 Continue) come before the real one.
    if (statusCode < 200) return true
    this.statusCode = statusCode
    const success = statusCode < 300
    // A success read whole is read for its rate-limit headers only; a failure for all of them (wait hints).
    this.headers = headerRecord(rawHeaders, success && this.sink === null)
    if (!success || this.sink === null) return true
    this.streaming = true
    this.sink.resume = resume
    this.sink.cancel = this.onCancel
    this.resolve({ statusCode, headers: this.headers, body: null })
    return true
  }

  onData(chunk: Buffer): boolean {
    if (this.streaming) return this.sink!.push(chunk)
    this.chunks.push(chunk)
    this.size += chunk.length
    return true
  }

  onComplete(): void {
    if (this.finished) return
    this.finished = true
    this.signal.removeListener('abort', this.onCancel)
    if (this.streaming) return this.sink!.end()
    const chunks = this.chunks
    this.resolve({ statusCode: this.statusCode, headers: this.headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.size) })
  }

  onError(error: Error): void {
    if (this.finished) return
    this.finished = true
    this.signal.removeListener('abort', this.onCancel)
    if (this.streaming) this.sink!.fail(error)
    else this.reject(error)
  }
}

/** What a successful answer is read for: the provider's rate-limit window (see rate-limit.ts). */
const RATE_LIMIT_PREFIXES = ['x-ratelimit-', 'anthropic-ratelimit-'].map((prefix) => Buffer.from(prefix, 'latin1'))

/** True when the header name starts with one of the rate-limit prefixes, in any case, without decoding it. */
function isRateLimitHeader(name: Buffer | string): boolean {
  if (typeof name === 'string') return /^(?:x|anthropic)-ratelimit-/i.test(name)
  for (const prefix of RATE_LIMIT_PREFIXES) {
    if (name.length <= prefix.length) continue
    let index = 0
    // `| 0x20` lower-cases ASCII letters and leaves '-' as it is: the prefixes hold nothing else.
    while (index < prefix.length && (name[index]! | 0x20) === prefix[index]) index++
    if (index === prefix.length) return true
  }
  return false
}

/** undici's raw header list as a record, names lower-cased; `rateLimitOnly` skips the dozen others (decoding them is measurable). */
function headerRecord(raw: Buffer[] | string[] | null, rateLimitOnly: boolean): Record<string, string> {
  const headers: Record<string, string> = {}
  if (raw === null) return headers
  for (let index = 0; index + 1 < raw.length; index += 2) {
    if (rateLimitOnly && !isRateLimitHeader(raw[index]!)) continue
    const name = raw[index]!.toString('latin1').toLowerCase()
    const value = raw[index + 1]!.toString('latin1')
    const previous = headers[name]
    headers[name] = previous === undefined ? value : `${previous}, ${value}`
  }
  return headers
}

/** Classifies a failed upstream answer from its status, headers and body text (read as JSON when it is JSON: errors/body.ts). */
export function failureOf(statusCode: number, headers: Record<string, string>, text: string, now: () => number): AttemptFailed {
  return { ok: false, failure: classifyFailure({ status: statusCode, headers, body: text, now: now() }), headers }
}

/** Joins a base URL and a path without doubling `/v1` or slashes. */
export function splitBaseUrl(baseUrl: string, path: string): { origin: string; path: string } {
  const url = new URL(baseUrl)
  let prefix = url.pathname.replace(/\/+$/, '')
  if (prefix.endsWith('/v1') && path.startsWith('/v1/')) prefix = prefix.slice(0, -3)
  return { origin: url.origin, path: `${prefix}${path}${url.search}` }
}
