/** Server-sent events: the streaming framing of every provider we speak. */

/** One parsed event: its `event:` name (undefined when absent) and its joined `data:` lines. */
export interface SseMessage {
  event: string | undefined
  data: string
}

/** An incremental SSE parser (WHATWG rules), synchronous: bytes in, events out through `onEvent`, no promise per event. */
export class SseParser {
  private readonly decoder = new TextDecoder()
  private buffer = ''
  private event: string | undefined = undefined
  private data: string[] = []

  constructor(private readonly onEvent: (event: string | undefined, data: string) => void) {}

  /** Parses a chunk; complete events are dispatched before it returns. */
  push(chunk: Uint8Array | string): void {
    const buffer = this.buffer + (typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true }))
    let start = 0
    for (;;) {
      const newline = buffer.indexOf('\n', start)
      if (newline < 0) break
      const end = newline > start && buffer.charCodeAt(newline - 1) === 0x0d ? newline - 1 : newline
      this.line(buffer, start, end)
      start = newline + 1
    }
    this.buffer = start === 0 ? buffer : buffer.slice(start)
  }

  /** The body ended: a last event without its blank line is still dispatched. */
  end(): void {
    const tail = (this.buffer + this.decoder.decode()).replace(/\r$/, '')
    this.buffer = ''
    if (tail.startsWith('data:')) this.data.push(tail.slice(5).replace(/^ /, ''))
    this.dispatch()
  }

  private line(buffer: string, start: number, end: number): void {
    if (start === end) return this.dispatch()
    if (buffer.charCodeAt(start) === 0x3a /* : comment */) return
    // The common case, "data: {...}", without slicing the field name out first.
    if (buffer.startsWith('data:', start)) {
      const from = buffer.charCodeAt(start + 5) === 0x20 ? start + 6 : start + 5
      this.data.push(buffer.slice(from, end))
      return
    }
    const line = buffer.slice(start, end)
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') this.data.push(value)
    else if (field === 'event') this.event = value
  }

  private dispatch(): void {
    const data = this.data
    const event = this.event
    this.event = undefined
    if (data.length === 0) return
    this.data = []
    this.onEvent(event, data.length === 1 ? data[0]! : data.join('\n'))
  }
}

/** Parses an SSE byte stream into events. */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseMessage> {
  let ready: SseMessage[] = []
  const parser = new SseParser((event, data) => ready.push({ event, data }))
  for await (const chunk of body) {
    parser.push(chunk)
    if (ready.length === 0) continue
    const events = ready
    ready = []
    yield* events
  }
  parser.end()
  yield* ready
}
