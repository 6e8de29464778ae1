/**
 * Request/response between two nodes (join sync, anti-entropy): one length-prefixed JSON frame each
 * way on a libp2p stream, schema-checked on both sides. A reply may be a whole hold set (several
 * MB), so frame and buffer limits are raised on both ends above libp2p's 4 MiB.
 */
import './polyfill.ts'
import { lpStream } from '@libp2p/utils'
import type { Stream } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import type { ZodType } from 'zod'
import { z } from 'zod'
import { ClusterError } from './errors.ts'
import type { Node } from './node.ts'
import type { Counters } from './stats.ts'
import { namePattern } from './topics.ts'

/** Limits of request/response. */
export interface RpcLimits {
  /** Largest request frame a handler accepts. Default 1 MiB. */
  maxRequestBytes: number
  /** Largest response frame a requester accepts (and a handler sends). Default 16 MiB. */
  maxResponseBytes: number
  /** Default time for a whole request, dial included. Default 10 s. */
  timeoutMs: number
}

/** Default request/response limits. */
export const defaultRpcLimits: RpcLimits = {
  maxRequestBytes: 1024 * 1024,
  maxResponseBytes: 16 * 1024 * 1024,
  timeoutMs: 10_000,
}

/** Options of one `cluster.request()`. */
export type RequestOptions = Partial<Pick<RpcLimits, 'timeoutMs' | 'maxResponseBytes'>>

/** Answers a request; `from` is the requester's peer id. Throwing sends `remote_error` back. */
export type RequestHandler<Q, R> = (request: Q, from: string) => Promise<R> | R

const responseFrameSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), body: z.unknown() }),
  z.object({ ok: z.literal(false), code: z.string().max(64), message: z.string().max(2048) }),
])

/** The libp2p protocol string of a request/response protocol name. */
export function protocolId(protocol: string): string {
  if (!namePattern.test(protocol)) {
    throw new ClusterError('invalid_init', `protocol name "${protocol}" must be letters, digits, . _ - separated by /`)
  }
  return `/switchboard/rpc/1/${protocol}`
}

/** What request/response needs from the cluster. */
export interface RpcComponents {
  node: Node
  counters: Counters
  log(level: 'warn' | 'debug', message: string, fields?: Record<string, unknown>): void
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

function frame(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value))
}

/** Request/response over libp2p streams. */
export class Rpc {
  constructor(
    private readonly components: RpcComponents,
    private readonly limits: RpcLimits,
  ) {}

  /** Registers the handler of `protocol`; a second handler for the same protocol replaces the first. */
  async handle<Q, R>(protocol: string, requestSchema: ZodType<Q>, responseSchema: ZodType<R>, handler: RequestHandler<Q, R>): Promise<void> {
    const id = protocolId(protocol)
    const { node, counters, log } = this.components
    const registered = node.handle(id, async (stream, connection) => {
      const from = connection.remotePeer.toString()
      const signal = AbortSignal.timeout(this.limits.timeoutMs * 3)
      const framed = lpStream(stream, { maxDataLength: this.limits.maxRequestBytes, maxBufferSize: this.limits.maxRequestBytes + 64 })
      let reply: unknown
      try {
        const raw = await framed.read({ signal })
        let request: { success: true; data: Q } | { success: false } = { success: false }
        try {
          request = requestSchema.safeParse(JSON.parse(decoder.decode(raw.subarray())))
        } catch {
          // not UTF-8 or not JSON: answered like a schema miss
        }
        if (!request.success) {
          counters.dropped.invalid++
          reply = { ok: false, code: 'invalid_request', message: `request does not match ${protocol}'s schema` }
        } else {
          try {
            const response = responseSchema.safeParse(await handler(request.data, from))
            if (response.success) reply = { ok: true, body: response.data }
            else {
              log('warn', 'a request handler answered with a response its schema refuses', { protocol, error: response.error.message })
              reply = { ok: false, code: 'handler_error', message: 'the handler produced an invalid response' }
            }
          } catch (error) {
            reply = { ok: false, code: error instanceof ClusterError ? error.code : 'handler_error', message: String((error as Error)?.message ?? error).slice(0, 2000) }
          }
        }
        let bytes = frame(reply)
        if (bytes.byteLength > this.limits.maxResponseBytes) {
          bytes = frame({ ok: false, code: 'response_too_large', message: `response is ${bytes.byteLength} bytes, over ${this.limits.maxResponseBytes}` })
        }
        await framed.write(bytes, { signal })
        await stream.close({ signal })
        counters.requests.served++
      } catch (error) {
        // A peer that sends garbage or hangs up only loses its own stream.
        log('debug', 'request stream failed', { protocol, from, error: String(error) })
        stream.abort(error instanceof Error ? error : new Error(String(error)))
      }
    }, { maxInboundStreams: 64, maxOutboundStreams: 64 })
    // The handler is in place at once; only the protocol's entry in this node's peer record (a
    // peer-store write that can wait long while a large fleet connects) is awaited, a few seconds at most.
    registered.catch((error: unknown) => log('debug', 'protocol not recorded in the own peer record', { protocol, error: String(error) }))
    let waited: NodeJS.Timeout | undefined
    await Promise.race([registered, new Promise<void>((resolve) => (waited = setTimeout(resolve, 5_000)))])
    clearTimeout(waited)
  }

  /** Sends one request to `peerId` and returns its schema-checked response. */
  async request<Q, R>(peerId: string, protocol: string, request: Q, responseSchema: ZodType<R>, options: RequestOptions = {}): Promise<R> {
    const timeoutMs = options.timeoutMs ?? this.limits.timeoutMs
    const signal = AbortSignal.timeout(timeoutMs)
    // The deadline holds whatever libp2p does: opening a stream awaits a peer-store write without
    // the signal, which once never ended and hung a joining node's start (issue 19).
    const { promise: expired, reject } = Promise.withResolvers<never>()
    const onAbort = (): void => reject(new ClusterError('request_timeout', `${peerId} did not answer ${protocol} within ${timeoutMs} ms`, { retryable: true }))
    signal.addEventListener('abort', onAbort, { once: true })
    expired.catch(() => {})
    try {
      return await Promise.race([this.exchange(peerId, protocol, request, responseSchema, options, signal), expired])
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  private async exchange<Q, R>(peerId: string, protocol: string, request: Q, responseSchema: ZodType<R>, options: RequestOptions, signal: AbortSignal): Promise<R> {
    const id = protocolId(protocol)
    const { node, counters } = this.components
    // A deadline that passes rejects `request` at once: what this throws after it goes nowhere.
    const maxResponseBytes = options.maxResponseBytes ?? this.limits.maxResponseBytes
    counters.requests.sent++
    let stream: Stream | undefined
    try {
      let target
      try {
        target = peerIdFromString(peerId)
      } catch (error) {
        throw new ClusterError('peer_unreachable', `"${peerId}" is not a peer id`, { cause: error })
      }
      try {
        stream = await node.dialProtocol(target, id, { signal })
      } catch (error) {
        if ((error as Error).name === 'UnsupportedProtocolError') throw new ClusterError('remote_error', `${peerId} does not handle ${protocol}`, { cause: error })
        throw new ClusterError('peer_unreachable', `cannot reach ${peerId}: ${String(error)}`, { retryable: true, cause: error })
      }
      stream.maxReadBufferLength = maxResponseBytes + 64 * 1024
      const framed = lpStream(stream, { maxDataLength: maxResponseBytes, maxBufferSize: maxResponseBytes + 64 * 1024 })
      let raw
      try {
        await framed.write(frame(request), { signal })
        raw = await framed.read({ signal })
      } catch (error) {
        throw new ClusterError('request_failed', `${protocol} to ${peerId} failed: ${String(error)}`, { retryable: true, cause: error })
      }
      counters.requests.responseBytes += raw.byteLength
      let reply: z.infer<typeof responseFrameSchema>
      try {
        reply = responseFrameSchema.parse(JSON.parse(decoder.decode(raw.subarray())))
      } catch (error) {
        throw new ClusterError('response_invalid', `${peerId} answered ${protocol} with a malformed frame`, { cause: error })
      }
      if (!reply.ok) throw new ClusterError('remote_error', `${peerId} refused ${protocol}: ${reply.code}: ${reply.message}`)
      const body = responseSchema.safeParse(reply.body)
      if (!body.success) {
        counters.dropped.invalid++
        throw new ClusterError('response_invalid', `${peerId}'s ${protocol} response does not match its schema: ${body.error.message}`)
      }
      await stream.close({ signal }).catch(() => {})
      return body.data
    } catch (error) {
      counters.requests.failed++
      stream?.abort(error instanceof Error ? error : new Error(String(error)))
      throw error
    }
  }
}
