import { describe, expect, it } from 'vitest'
import { parseSse, type SseMessage } from './sse.ts'

async function collect(chunks: string[]): Promise<SseMessage[]> {
  const events: SseMessage[] = []
  const encoder = new TextEncoder()
  async function* source() {
    for (const chunk of chunks) yield encoder.encode(chunk)
  }
  for await (const event of parseSse(source())) events.push(event)
  return events
}

describe('parseSse', () => {
  it('splits events on blank lines, across chunk boundaries and CRLF', async () => {
    const events = await collect(['data: {"a":', '1}\r\n\r\nevent: ping\ndata: {}\n', '\n: comment\ndata: [DONE]\n\n'])
    expect(events).toEqual([
      { event: undefined, data: '{"a":1}' },
      { event: 'ping', data: '{}' },
      { event: undefined, data: '[DONE]' },
    ])
  })

  it('joins multi-line data and keeps a final event without a trailing blank line', async () => {
    expect(await collect(['data: one\ndata: two\n\ndata: last'])).toEqual([
      { event: undefined, data: 'one\ntwo' },
      { event: undefined, data: 'last' },
    ])
  })

  it('decodes multi-byte characters split across chunks', async () => {
    const bytes = new TextEncoder().encode('data: héllo\n\n')
    async function* source() {
      yield bytes.slice(0, 8)
      yield bytes.slice(8)
    }
    const events: SseMessage[] = []
    for await (const event of parseSse(source())) events.push(event)
    expect(events).toEqual([{ event: undefined, data: 'héllo' }])
  })
})
