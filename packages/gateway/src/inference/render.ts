/**
 * Renders a served request straight onto Node's ServerResponse: JSON with extra_fields, or
 * SSE whose last chunk carries them. Writing directly skips a WHATWG Response and
 * ReadableStream per request, which the profile showed costing more than the rest of the
 * streaming path (bench/LOG.md, 2026-11-29).
 */
import type { ServerResponse } from 'node:http'
import { StreamFailure, type StreamSuccess } from '@switchboard/providers'
import type { Served } from './engine.ts'

/** The JSON answer: the upstream's body (chat.completion, message, response, ...) with `extra_fields` added. */
export function renderJson(outgoing: ServerResponse, served: Served, headers: Record<string, string>): void {
  const success = served.success
  if (success.kind !== 'json') throw new Error('renderJson needs a JSON success')
  const extra = JSON.stringify(served.extraFields)
  let body: Buffer
  if (success.bytes !== undefined) {
    // Splice into the upstream's own bytes rather than parse and re-serialize them; one
    // buffer, so the answer leaves in one write with its headers.
    const bytes = success.bytes
    const close = bytes.lastIndexOf(0x7d)
    let last = close - 1
    while (last >= 0 && isSpace(bytes[last]!)) last--
    const tail = `${bytes[last] === 0x7b ? '' : ','}"extra_fields":${extra}}`
    body = Buffer.allocUnsafe(close + Buffer.byteLength(tail))
    bytes.copy(body, 0, 0, close)
    body.write(tail, close)
  } else {
    const text = JSON.stringify(success.body)
    body = Buffer.from(`${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"extra_fields":${extra}}`)
  }
  headers['content-type'] = 'application/json'
  headers['content-length'] = String(body.length)
  outgoing.writeHead(200, headers)
  outgoing.end(body)
}

/** How a stream is framed on the wire: chat's bare `data:` lines and `[DONE]`, or named events. */
export interface StreamFraming {
  /** One event of the upstream (its JSON data). */
  frame(data: string): string
  /** False for an event that cannot be the last (a content delta: sent at once); one that may be is held until the next. */
  mayEnd(data: string): boolean
  /** The last event, carrying `extra_fields`. */
  last(pending: string | null, served: Served): string
  /** The event that ends a stream which broke after it started (or failed while the caller's connection was held open). */
  error(message: string, code: string, extraFields: unknown): string
  /** What ends the stream (`data: [DONE]` for chat). */
  end: string
}

/** chat.completions framing: `data: {chunk}` lines, the last chunk carrying extra_fields, then `[DONE]`. */
export const CHAT_FRAMING: StreamFraming = {
  frame: (data) => `data: ${data}\n\n`,
  // A chunk still generating (no finish reason, no usage) is never the last of a stream that ends well.
  mayEnd: (data) => !data.includes('"finish_reason":null') || data.includes('"usage":{'),
  last: (pending, served) => `data: ${withExtraFields(pending, served)}\n\n`,
  error: (message, code, extraFields) => `data: ${JSON.stringify({ error: { message, type: 'upstream_error', code, param: null }, extra_fields: extraFields })}\n\n`,
  end: 'data: [DONE]\n\n',
}

/**
 * The SSE answer. Content goes out as it comes; only an event that may be the last is held until
 * the next, so the final chunk can carry `extra_fields` without delaying a token. A stream that
 * breaks after it started is continued where the engine can (`served.resume`), else it ends with
 * an error event naming the break. Writes of one tick go out in one syscall.
 */
export async function renderStream(outgoing: ServerResponse, served: Served, headers: Record<string, string>, framing: StreamFraming): Promise<Served> {
  if (served.success.kind !== 'stream') throw new Error('renderStream needs a stream success')
  // The caller's connection may already be open (http/stream-hold.ts): its 200 went out then.
  if (!outgoing.headersSent) outgoing.writeHead(200, sseHeaders(headers))
  let corked = false
  const uncork = () => {
    corked = false
    outgoing.uncork()
  }
  const write = async (text: string) => {
    if (outgoing.destroyed) return
    if (!corked) {
      corked = true
      outgoing.cork()
      process.nextTick(uncork)
    }
    if (!outgoing.write(text)) await waitForDrain(outgoing)
  }
  let pending: string | null = null
  const observer = served.observer
  let current = served
  // Every event sent, kept only while a break could be continued (the continuation reads them back).
  const sent: string[] | null = served.resume !== undefined ? [] : null
  try {
    for (;;) {
      const splicer = current.splicer
      try {
        for await (const upstream of (current.success as StreamSuccess).events) {
          if (outgoing.destroyed) break
          const data = splicer === undefined ? upstream : splicer.accept(upstream)
          if (data === null) continue
          if (pending !== null) {
            await write(framing.frame(pending))
            pending = null
          }
          sent?.push(data)
          observer?.chunk(data)
          if (framing.mayEnd(data)) pending = data
          else await write(framing.frame(data))
        }
        if (!outgoing.destroyed) await write(framing.last(pending, current))
        break
      } catch (error) {
        if (outgoing.destroyed) break
        const next = sent !== null && current.resume !== undefined ? await current.resume(sent) : null
        if (next !== null && !outgoing.destroyed) {
          current.upstream.abort()
          next.previous = current
          current = next
          observer?.continued?.(next)
          continue
        }
        if (pending !== null) await write(framing.frame(pending))
        const message = error instanceof Error ? error.message : String(error)
        observer?.broke(message)
        const code = error instanceof StreamFailure ? error.failure.code : (error as { code?: unknown }).code
        await write(framing.error(`The upstream stream broke: ${message}`, typeof code === 'string' ? code : 'upstream_stream_error', current.extraFields))
        break
      }
    }
  } finally {
    current.upstream.abort()
  }
  if (!outgoing.destroyed) outgoing.end(framing.end)
  // What served the end of the stream (a continuation links back to what it continued).
  return current
}

/** The headers of an SSE answer, added to `headers`. */
export function sseHeaders(headers: Record<string, string>): Record<string, string> {
  headers['content-type'] = 'text/event-stream; charset=utf-8'
  headers['cache-control'] = 'no-cache'
  headers['x-accel-buffering'] = 'no'
  return headers
}

function waitForDrain(outgoing: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      outgoing.removeListener('drain', done)
      outgoing.removeListener('close', done)
      resolve()
    }
    outgoing.once('drain', done)
    outgoing.once('close', done)
  })
}

function withExtraFields(pending: string | null, served: Served): string {
  const extra = JSON.stringify(served.extraFields)
  if (pending === null) return `{"object":"chat.completion.chunk","choices":[],"extra_fields":${extra}}`
  return spliceExtraFields(pending, extra) ?? `${pending}\n\ndata: {"object":"chat.completion.chunk","choices":[],"extra_fields":${extra}}`
}

/** The JSON object text with `"extra_fields":extra` added as its last field; null when it is not an object. */
export function spliceExtraFields(pending: string, extra: string): string | null {
  // Splice into the chunk's own text, as for a JSON answer, rather than parse and re-serialize it.
  let last = pending.length - 1
  while (last >= 0 && isSpace(pending.charCodeAt(last))) last--
  if (pending.charCodeAt(0) === 0x7b && last > 0 && pending.charCodeAt(last) === 0x7d) {
    let before = last - 1
    while (before >= 0 && isSpace(pending.charCodeAt(before))) before--
    return `${pending.slice(0, last)}${before === 0 ? '' : ','}"extra_fields":${extra}}`
  }
  return null
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09
}
