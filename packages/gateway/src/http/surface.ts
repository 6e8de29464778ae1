/** What every inference route shares around the engine: the common body fields, the request's headers in and the routing headers out. */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import { readSessionHeaders, RoutingLog } from '@switchboard/routing'
import { Cancellation } from '@switchboard/providers'
import type { Logger } from 'pino'
import { GatewayError } from '../errors.ts'
import type { RequestContext } from '../dispatch/dispatcher.ts'
import { readDeadlineHeaders } from '../inference/deadlines.ts'

/** The routing context of a request: its id, session, direct key and routing log (`recording`: the request log is on). */
export function requestContext(headers: IncomingHttpHeaders, logger: Logger, requestId: string, recording: boolean, allowDirectKeys: boolean): RequestContext {
  const session = readSessionHeaders(headers)
  const directKey = headers['x-bf-direct-key']
  if (directKey !== undefined && !allowDirectKeys) {
    throw new GatewayError('direct_keys_disabled', 'This gateway does not accept provider keys from callers (x-bf-direct-key). Drop the header to use the configured keys, or set "client": {"allow_direct_keys": true} in config.json to allow them.')
  }
  const wantsLog = headers['x-bf-routing-log'] === 'true' || logger.isLevelEnabled('debug')
  return { requestId, sessionId: session.sessionId, sessionTtlMs: session.ttlMs ?? undefined, directKey: typeof directKey === 'string' && directKey !== '' ? directKey : null, log: new RoutingLog(wantsLog, recording), deadlines: readDeadlineHeaders(headers) }
}

/** A Cancellation that aborts when the caller goes away before the answer is complete. */
export function callerCancellation(outgoing: ServerResponse): Cancellation {
  const caller = new Cancellation()
  // 'close' comes once per response: a plain listener spares the once() wrapper per request.
  outgoing.on('close', () => {
    if (!outgoing.writableFinished) caller.abort()
  })
  return caller
}

/** A routing fact as a header value safe for writeHead (a key called "clé" percent-encoded); `none` when nothing was chosen. */
function headerValue(value: unknown): string {
  if (typeof value !== 'string') return 'none'
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value)
}

/** The routing facts as response headers; `none` where nothing was chosen (an error before any attempt). */
export function routingHeaders(requestId: string, extra: { provider?: unknown; model?: unknown; key_name?: unknown } | undefined): Record<string, string> {
  return { 'x-request-id': requestId, 'x-bf-provider': headerValue(extra?.provider), 'x-bf-model': headerValue(extra?.model), 'x-bf-key-name': headerValue(extra?.key_name) }
}

/** `stream` as a boolean, or a 400. */
export function readStream(input: Record<string, unknown>): boolean {
  const stream = input.stream
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw new GatewayError('invalid_request', '"stream" must be true or false.', { param: 'stream' })
  return stream === true
}

/** The path of a request's URL, without its query. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '/'
  const query = url.indexOf('?')
  return query < 0 ? url : url.slice(0, query)
}

/** Writes a whole JSON answer; `headers` gets its content type and length. */
export function writeJson(outgoing: ServerResponse, status: number, body: object, headers: Record<string, string>): void {
  const text = JSON.stringify(body)
  headers['content-type'] = 'application/json'
  headers['content-length'] = String(Buffer.byteLength(text))
  outgoing.writeHead(status, headers)
  outgoing.end(text)
}

/** setTimeout as a promise that rejects when the cancellation fires first. */
export function cancellableSleep(ms: number, cancellation: Cancellation): Promise<void> {
  return new Promise((resolve, reject) => {
    if (cancellation.aborted) return reject(new Error('cancelled'))
    const onAbort = () => {
      clearTimeout(timer)
      reject(new Error('cancelled'))
    }
    const timer = setTimeout(() => {
      cancellation.removeListener('abort', onAbort)
      resolve()
    }, ms)
    cancellation.once('abort', onAbort)
  })
}
