/** Server-sent events: the streaming framing of every provider we speak. */

/** One parsed event: its `event:` name (undefined when absent) and its joined `data:` lines. */
export interface SseEvent {
  event: string | undefined
  data: string
}

/**
 * Parses an SSE byte stream into events (WHATWG rules: fields per line, `data` lines
 * joined by "\n", an empty line dispatches, comments and unknown fields ignored).
 */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder()
  let buffer = ''
  let event: string | undefined
  let data: string[] = []
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true })
    let start = 0
    for (;;) {
      const newline = buffer.indexOf('\n', start)
      if (newline < 0) break
      let line = buffer.slice(start, newline)
      start = newline + 1
      if (line.endsWith('\r')) line = line.slice(0, -1)
      if (line === '') {
        if (data.length > 0) yield { event, data: data.join('\n') }
        event = undefined
        data = []
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon < 0 ? line : line.slice(0, colon)
      let value = colon < 0 ? '' : line.slice(colon + 1)
      if (value.startsWith(' ')) value = value.slice(1)
      if (field === 'data') data.push(value)
      else if (field === 'event') event = value
    }
    buffer = buffer.slice(start)
  }
  buffer += decoder.decode()
  const tail = buffer.replace(/\r$/, '')
  if (tail.startsWith('data:')) data.push(tail.slice(5).replace(/^ /, ''))
  if (data.length > 0) yield { event, data: data.join('\n') }
}
