import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { Served } from './engine.ts'
import { CHAT_FRAMING, renderStream, type StreamFraming } from './render.ts'
import { ANTHROPIC_FRAMING, RESPONSES_FRAMING } from './event-framing.ts'

const chunk = (delta: string, finish: string | null = null) => JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: delta }, finish_reason: finish }] })

/** An upstream whose events the test hands out one at a time. */
class Upstream {
  private queue: (string | null)[] = []
  private waiting: ((value: string | null) => void) | null = null
  send(event: string | null): void {
    if (this.waiting !== null) {
      const wake = this.waiting
      this.waiting = null
      wake(event)
    } else this.queue.push(event)
  }
  async *events(): AsyncIterable<string> {
    for (;;) {
      const next = this.queue.length > 0 ? this.queue.shift()! : await new Promise<string | null>((resolve) => (this.waiting = resolve))
      if (next === null) return
      yield next
    }
  }
}

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  server = undefined
})

/** Serves one stream rendered by `renderStream` and returns the caller's side, read as it arrives. */
async function serve(upstream: Upstream, framing: StreamFraming): Promise<{ readUntil: (text: string) => Promise<string> }> {
  server = createServer((_request, response) => {
    const served = {
      success: { ok: true, kind: 'stream', status: 200, headers: {}, rateLimit: null, events: upstream.events() },
      extraFields: { provider: 'openai', model: 'gpt-4o-mini', key_id: 'k1', key_name: 'k1', attempts: [], request_id: 'r1' },
      upstream: { abort: () => {} },
    } as unknown as Served // the renderer reads only these fields
    void renderStream(response, served, {}, framing)
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  // Not awaited here: Node sends the status line with the first body write, which is the test's to cause.
  let received = ''
  let ended = false
  let wake: (() => void) | null = null
  httpRequest(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/`, (response: IncomingMessage) => {
    response.on('data', (data: Buffer) => {
      received += data.toString('utf8')
      wake?.()
    })
    response.on('end', () => {
      ended = true
      wake?.()
    })
  }).end()
  return {
    // Bounded so a renderer that holds the event back fails here instead of hanging the suite.
    async readUntil(text) {
      const giveUp = Date.now() + 5_000
      while (!received.includes(text) && !ended && Date.now() < giveUp) {
        await new Promise<void>((resolve) => {
          wake = resolve
          setTimeout(resolve, 100)
        })
      }
      return received
    },
  }
}

describe('renderStream', () => {
  it('sends each content chunk as it comes, while the upstream has sent nothing after it', async () => {
    const upstream = new Upstream()
    const caller = await serve(upstream, CHAT_FRAMING)
    upstream.send(chunk('Hel'))
    expect(await caller.readUntil('Hel')).toContain('"content":"Hel"')
    upstream.send(chunk('lo'))
    expect(await caller.readUntil('"lo"')).toContain('"content":"lo"')
    upstream.send(chunk('', 'stop'))
    upstream.send(null)
    const whole = await caller.readUntil('[DONE]')
    // The finish chunk was held for the end: it, the last before [DONE], carries extra_fields.
    const events = whole.split('\n\n').filter((event) => event.startsWith('data: '))
    expect(events.at(-1)).toBe('data: [DONE]')
    expect(JSON.parse(events.at(-2)!.slice(6))).toMatchObject({ choices: [{ finish_reason: 'stop' }], extra_fields: { provider: 'openai', key_id: 'k1' } })
    expect(events.filter((event) => event.includes('extra_fields'))).toHaveLength(1)
  })

  it('gives extra_fields a chunk of its own when the stream ends on a content chunk', async () => {
    const upstream = new Upstream()
    const caller = await serve(upstream, CHAT_FRAMING)
    upstream.send(chunk('only'))
    upstream.send(null)
    const events = (await caller.readUntil('[DONE]')).split('\n\n').filter((event) => event.startsWith('data: '))
    expect(events).toHaveLength(3)
    expect(events[0]).toBe(`data: ${chunk('only')}`)
    expect(JSON.parse(events[1]!.slice(6))).toMatchObject({ choices: [], extra_fields: { model: 'gpt-4o-mini' } })
    expect(events[2]).toBe('data: [DONE]')
  })

  it('sends Messages deltas at once and puts extra_fields on message_stop', async () => {
    const upstream = new Upstream()
    const caller = await serve(upstream, ANTHROPIC_FRAMING)
    upstream.send('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}')
    expect(await caller.readUntil('"Hi"')).toContain('event: content_block_delta')
    upstream.send('{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}')
    upstream.send('{"type":"message_stop"}')
    upstream.send(null)
    const whole = await caller.readUntil('message_stop')
    expect(whole.trim().split('\n\n').at(-1)).toMatch(/^event: message_stop\ndata: \{"type":"message_stop","extra_fields":\{/)
  })

  it('sends Responses text deltas at once and puts extra_fields on response.completed', async () => {
    const upstream = new Upstream()
    const caller = await serve(upstream, RESPONSES_FRAMING)
    upstream.send('{"type":"response.output_text.delta","delta":"Hi"}')
    expect(await caller.readUntil('"Hi"')).toContain('event: response.output_text.delta')
    upstream.send('{"type":"response.completed","response":{"status":"completed"}}')
    upstream.send(null)
    const whole = await caller.readUntil('extra_fields')
    expect(whole.trim().split('\n\n').at(-1)).toMatch(/^event: response.completed\ndata: \{"type":"response.completed".*"extra_fields":\{/)
  })
})
