/** Renders a served request: JSON with extra_fields, or SSE whose last chunk carries them. */
import type { Context } from 'hono'
import { stream } from 'hono/streaming'
import type { Served } from './engine.ts'

/** The JSON answer: the upstream's chat.completion with `extra_fields` added. */
export function renderJson(context: Context, served: Served): Response {
  const success = served.success
  if (success.kind !== 'json') throw new Error('renderJson needs a JSON success')
  const extra = JSON.stringify(served.extraFields)
  if (success.bytes !== undefined) {
    // Splice into the upstream's own bytes rather than parse and re-serialize them.
    const bytes = success.bytes
    const close = bytes.lastIndexOf(0x7d)
    let last = close - 1
    while (last >= 0 && (bytes[last] === 0x20 || bytes[last] === 0x0a || bytes[last] === 0x0d || bytes[last] === 0x09)) last--
    const tail = Buffer.from(`${bytes[last] === 0x7b ? '' : ','}"extra_fields":${extra}}`)
    return context.body(Buffer.concat([bytes.subarray(0, close), tail]), 200, { 'content-type': 'application/json' })
  }
  const text = JSON.stringify(success.body)
  return context.body(`${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"extra_fields":${extra}}`, 200, { 'content-type': 'application/json' })
}

/**
 * The SSE answer. One chunk is held back so the final chunk before `[DONE]` can carry
 * `extra_fields`; a stream that breaks after it started ends with an error event, since
 * the status line is already sent and a retry would duplicate output.
 */
export function renderStream(context: Context, served: Served): Response {
  if (served.success.kind !== 'stream') throw new Error('renderStream needs a stream success')
  const events = served.success.events
  context.header('content-type', 'text/event-stream; charset=utf-8')
  context.header('cache-control', 'no-cache')
  context.header('x-accel-buffering', 'no')
  return stream(context, async (out) => {
    out.onAbort(served.abort)
    let pending: string | null = null
    try {
      for await (const data of events) {
        if (out.aborted) break
        if (pending !== null) await out.write(`data: ${pending}\n\n`)
        pending = data
      }
      if (out.aborted) return
      await out.write(`data: ${withExtraFields(pending, served)}\n\n`)
    } catch (error) {
      if (out.aborted) return
      if (pending !== null) await out.write(`data: ${pending}\n\n`)
      const message = error instanceof Error ? error.message : String(error)
      const code = (error as { code?: unknown }).code
      await out.write(`data: ${JSON.stringify({ error: { message: `The upstream stream broke: ${message}`, type: 'upstream_error', code: typeof code === 'string' ? code : 'upstream_stream_error', param: null }, extra_fields: served.extraFields })}\n\n`)
    } finally {
      served.abort()
    }
    await out.write('data: [DONE]\n\n')
  })
}

function withExtraFields(pending: string | null, served: Served): string {
  if (pending !== null) {
    try {
      const chunk = JSON.parse(pending) as Record<string, unknown>
      chunk.extra_fields = served.extraFields
      return JSON.stringify(chunk)
    } catch {
      // Not JSON: send it as is, then a chunk of our own with the fields.
      return `${pending}\n\ndata: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [], extra_fields: served.extraFields })}`
    }
  }
  return JSON.stringify({ object: 'chat.completion.chunk', choices: [], extra_fields: served.extraFields })
}
