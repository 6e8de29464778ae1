import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cancellation } from './cancellation.ts'
import { OpenAiChunkQueue } from './openai-stream.ts'
import { createDispatcher, postStreaming } from './transport.ts'

const sse = (...events: string[]) => Buffer.from(events.map((data) => `data: ${data}\n\n`).join(''))

async function drain(queue: AsyncIterable<string>): Promise<string[]> {
  const seen: string[] = []
  for await (const chunk of queue) seen.push(chunk)
  return seen
}

describe('OpenAiChunkQueue', () => {
  it('yields each chunk in order across packet boundaries and stops at [DONE]', async () => {
    const queue = new OpenAiChunkQueue()
    const reading = drain(queue)
    queue.push(Buffer.from('data: {"n":1}\n\ndata: {"n"'))
    await Promise.resolve()
    queue.push(Buffer.from(':2}\n\n'))
    queue.push(sse('[DONE]', '{"after":true}'))
    queue.end()
    expect(await reading).toEqual(['{"n":1}', '{"n":2}'])
  })

  it('ends complete without [DONE] once a chunk finished, and throws an in-band error after the chunks before it', async () => {
    const plain = new OpenAiChunkQueue()
    plain.push(sse('{"n":1,"choices":[{"delta":{},"finish_reason":"stop"}]}', '{"choices":[],"usage":{"total_tokens":3}}'))
    plain.end()
    expect(await drain(plain)).toEqual(['{"n":1,"choices":[{"delta":{},"finish_reason":"stop"}]}', '{"choices":[],"usage":{"total_tokens":3}}'])

    const failing = new OpenAiChunkQueue()
    failing.push(sse('{"n":1}', '{"error":{"message":"overloaded","type":"server_error"}}'))
    const seen: string[] = []
    await expect(
      (async () => {
        for await (const chunk of failing) seen.push(chunk)
      })(),
    ).rejects.toMatchObject({ name: 'StreamFailure', failure: { failureClass: 'transient', status: 200, code: 'server_error', message: 'the stream broke: overloaded' } })
    expect(seen).toEqual(['{"n":1}'])
  })

  it('rejects a body that ends before its last event, however cleanly the connection closed', async () => {
    const cases: Array<[ConstructorParameters<typeof OpenAiChunkQueue>[0], string[]]> = [
      ['chat', ['{"choices":[{"delta":{"content":"Hel"},"finish_reason":null}]}']],
      ['messages', ['{"type":"message_start","message":{}}', '{"type":"content_block_delta","delta":{"text":"Hel"}}']],
      ['responses', ['{"type":"response.created"}', '{"type":"response.output_text.delta","delta":"Hel"}']],
    ]
    for (const [ending, events] of cases) {
      const queue = new OpenAiChunkQueue(ending)
      queue.push(sse(...events))
      queue.end()
      const seen: string[] = []
      await expect((async () => {
        for await (const chunk of queue) seen.push(chunk)
      })()).rejects.toMatchObject({ name: 'StreamFailure', failure: { failureClass: 'transient', code: 'stream_truncated' } })
      expect(seen).toEqual(events)
    }
    const complete = new OpenAiChunkQueue('messages')
    complete.push(sse('{"type":"message_start"}', '{"type":"message_stop"}'))
    complete.end()
    expect(await drain(complete)).toHaveLength(2)
  })

  it('rejects an event whose data is not a JSON object (a truncated chunk) as malformed', async () => {
    const queue = new OpenAiChunkQueue()
    queue.push(sse('{"choices":[{"delta":{"content":"Hel"}}]}', '{"choices":[{"delta":{"content":"lo'))
    const seen: string[] = []
    await expect((async () => {
      for await (const chunk of queue) seen.push(chunk)
    })()).rejects.toMatchObject({ failure: { failureClass: 'unknown', code: 'upstream_malformed' } })
    expect(seen).toHaveLength(1)
  })

  it('passes a transport failure on after the chunks already queued', async () => {
    const queue = new OpenAiChunkQueue()
    queue.push(sse('{"n":1}'))
    queue.fail(Object.assign(new Error('socket hang up'), { code: 'UND_ERR_SOCKET' }))
    const iterator = queue[Symbol.asyncIterator]()
    expect(await iterator.next()).toEqual({ value: '{"n":1}', done: false })
    await expect(iterator.next()).rejects.toMatchObject({ name: 'StreamFailure', failure: { failureClass: 'transient', code: 'UND_ERR_SOCKET' } })
  })

  it('asks the transport to pause past its high-water mark and resumes it once drained', async () => {
    const queue = new OpenAiChunkQueue()
    let resumed = 0
    queue.resume = () => resumed++
    const many = Array.from({ length: 100 }, (_, index) => `{"n":${index}}`)
    expect(queue.push(sse(...many.slice(0, 10)))).toBe(true)
    expect(queue.push(sse(...many.slice(10)))).toBe(false)
    const iterator = queue[Symbol.asyncIterator]()
    for (let index = 0; index < 60; index++) await iterator.next()
    expect(resumed).toBe(0)
    for (let index = 0; index < 10; index++) await iterator.next()
    expect(resumed).toBe(1)
  })

  it('cancels the upstream when the consumer stops early', async () => {
    const queue = new OpenAiChunkQueue()
    let cancelled = 0
    queue.cancel = () => cancelled++
    queue.push(sse('{"n":1}', '{"n":2}'))
    for await (const chunk of queue) if (chunk === '{"n":1}') break
    expect(cancelled).toBe(1)
  })
})

describe('postStreaming', () => {
  let server: Server
  let origin: string
  const dispatcher = createDispatcher()

  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume()
      request.on('end', async () => {
        if (request.url === '/refused') {
          response.writeHead(429, { 'retry-after': '2', 'content-type': 'application/json' })
          response.end('{"error":{"message":"slow down"}}')
          return
        }
        response.writeHead(200, { 'content-type': 'text/event-stream', 'x-ratelimit-remaining-requests': '5' })
        // 2,000 chunks in a burst: more than the queue holds, so the upstream is paused and resumed
        for (let index = 0; index < 2_000; index++) {
          if (!response.write(`data: {"n":${index},"pad":"${'x'.repeat(200)}"}\n\n`)) await new Promise((resolve) => response.once('drain', resolve))
        }
        response.end('data: [DONE]\n\n')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  it('resolves at the headers and streams every chunk in order through a slow consumer', async () => {
    const queue = new OpenAiChunkQueue()
    const response = await postStreaming(dispatcher, { origin, path: '/stream', headers: {}, body: '{}', signal: new Cancellation() }, queue)
    expect(response).toMatchObject({ statusCode: 200, body: null })
    expect(response.headers['x-ratelimit-remaining-requests']).toBe('5')
    let expected = 0
    for await (const chunk of queue) {
      expect(JSON.parse(chunk).n).toBe(expected++)
      if (expected % 100 === 0) await new Promise((resolve) => setTimeout(resolve, 1))
    }
    expect(expected).toBe(2_000)
  })

  it('reads a refused answer whole, with every header', async () => {
    const response = await postStreaming(dispatcher, { origin, path: '/refused', headers: {}, body: '{}', signal: new Cancellation() }, new OpenAiChunkQueue())
    expect(response.statusCode).toBe(429)
    expect(response.headers['retry-after']).toBe('2')
    expect(response.body?.toString('utf8')).toContain('slow down')
  })

  it('fails the stream where it is when the signal aborts it', async () => {
    const queue = new OpenAiChunkQueue()
    const signal = new Cancellation()
    await postStreaming(dispatcher, { origin, path: '/stream', headers: {}, body: '{}', signal }, queue)
    const iterator = queue[Symbol.asyncIterator]()
    expect((await iterator.next()).done).toBe(false)
    signal.abort()
    await expect(drain({ [Symbol.asyncIterator]: () => iterator })).rejects.toMatchObject({ name: 'StreamFailure', failure: { failureClass: 'cancelled' } })
  })
})
