import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cancellation } from './cancellation.ts'
import { createDispatcher, postBuffered, postStreaming, ReadableSink, withExtraHeaders, type StreamSink } from './transport.ts'

let server: Server
let origin: string
/** Requests the server saw, and whether each was cut before it answered. */
const seen: { path: string; body: string; headers: IncomingMessage['headers']; closedEarly: boolean }[] = []

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')))
    request.on('end', () => {
      const record = { path: request.url ?? '', body, headers: request.headers, closedEarly: false }
      seen.push(record)
      response.on('close', () => (record.closedEarly = !response.writableFinished))
      if (request.url === '/ok') {
        response.writeHead(200, [
          'Content-Type', 'application/json',
          'X-RateLimit-Remaining-Requests', '7',
          'x-ratelimit-reset-requests', '6ms',
          'anthropic-ratelimit-tokens-remaining', '100',
          'x-request-id', 'req_1',
        ])
        // two writes: the handler must join chunks
        response.write('{"id":')
        setTimeout(() => response.end('"x"}'), 5)
      } else if (request.url === '/refused') {
        response.writeHead(429, [['retry-after', '3'], ['x-extra', 'a'], ['X-Extra', 'b'], ['content-type', 'application/json']].flat())
        response.end('{"error":{"message":"slow down"}}')
      } else {
        // /hang: never answers
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe('postBuffered', () => {
  const dispatcher = createDispatcher()
  const headers = { 'content-type': 'application/json' }

  it('reads the whole answer, and keeps only the rate-limit headers of a success', async () => {
    const response = await postBuffered(dispatcher, { origin, path: '/ok', headers, body: '{"a":1}', signal: new Cancellation() })
    expect(response.statusCode).toBe(200)
    expect(response.body.toString('utf8')).toBe('{"id":"x"}')
    expect(response.headers).toEqual({ 'x-ratelimit-remaining-requests': '7', 'x-ratelimit-reset-requests': '6ms', 'anthropic-ratelimit-tokens-remaining': '100' })
    expect(seen.at(-1)).toMatchObject({ path: '/ok', body: '{"a":1}' })
  })

  it('sends the attempt\'s traceparent when it has one, and no such header when it has none', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    await postBuffered(dispatcher, { origin, path: '/ok', headers: { 'content-type': 'application/json' }, body: '{}', signal: new Cancellation(), traceparent })
    expect(seen.at(-1)!.headers.traceparent).toBe(traceparent)
    await postBuffered(dispatcher, { origin, path: '/ok', headers: { 'content-type': 'application/json' }, body: '{}', signal: new Cancellation() })
    expect(seen.at(-1)!.headers.traceparent).toBeUndefined()
  })

  it('keeps every header of a failure, repeated ones joined', async () => {
    const response = await postBuffered(dispatcher, { origin, path: '/refused', headers, body: '{}', signal: new Cancellation() })
    expect(response.statusCode).toBe(429)
    expect(response.headers).toMatchObject({ 'retry-after': '3', 'x-extra': 'a, b', 'content-type': 'application/json' })
    expect(response.body.toString('utf8')).toContain('slow down')
  })

  it('aborts the upstream call when the signal fires, and leaves no listener behind', async () => {
    const signal = new Cancellation()
    const pending = postBuffered(dispatcher, { origin, path: '/hang', headers, body: '{}', signal })
    await expect.poll(() => seen.at(-1)?.path).toBe('/hang')
    signal.abort('timeout')
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    await expect.poll(() => seen.at(-1)?.closedEarly).toBe(true)
    expect(signal.listenerCount('abort')).toBe(0)
  })

  it('does not send at all when the signal has already fired', async () => {
    const before = seen.length
    const signal = new Cancellation()
    signal.abort()
    await expect(postBuffered(dispatcher, { origin, path: '/ok', headers, body: '{}', signal })).rejects.toMatchObject({ name: 'AbortError' })
    expect(seen.length).toBe(before)
  })

  it('rejects with the network error when nothing listens', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const signal = new Cancellation()
    await expect(postBuffered(dispatcher, { origin: `http://127.0.0.1:${port}`, path: '/ok', headers, body: '{}', signal })).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(signal.listenerCount('abort')).toBe(0)
  })
})

describe('postStreaming', () => {
  it('holds more than 256 streams open at once to one origin: none waits for another to end', async () => {
    // Each stream's server side answers its headers and first event, then holds the stream open
    // until every stream has arrived: a pool that capped its connections would never get there.
    const streams = 300
    const open: ServerResponse[] = []
    let allArrived = () => {}
    const allOpen = new Promise<void>((resolve) => (allArrived = resolve))
    const upstream = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      response.write('data: {"n":1}\n\n')
      open.push(response)
      if (open.length === streams) allArrived()
    })
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    const at = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
    const dispatcher = createDispatcher()
    const ended: Promise<void>[] = []
    const sink = (done: () => void): StreamSink => ({ push: () => true, end: done, fail: done, resume: () => {}, cancel: () => {} })
    try {
      for (let index = 0; index < streams; index++) {
        let done = () => {}
        ended.push(new Promise<void>((resolve) => (done = resolve)))
        void postStreaming(dispatcher, { origin: at, path: '/stream', headers: {}, body: '{}', signal: new Cancellation() }, sink(done))
      }
      const reached = await Promise.race([allOpen.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 10_000))])
      expect(reached ? streams : open.length, 'streams the upstream saw open at once').toBe(streams)
      for (const response of open) response.end('data: [DONE]\n\n')
      await Promise.all(ended)
    } finally {
      await dispatcher.destroy()
      upstream.closeAllConnections()
      await new Promise((resolve) => upstream.close(resolve))
    }
  })
})

describe('withExtraHeaders', () => {
  it('adds configured headers without letting them replace the adapter\'s own', () => {
    expect(withExtraHeaders({ authorization: 'Bearer sk-own' }, { authorization: 'Bearer other', 'x-team': 'a' })).toEqual({ authorization: 'Bearer sk-own', 'x-team': 'a' })
    expect(withExtraHeaders({ a: '1' }, undefined)).toEqual({ a: '1' })
  })
})

describe('Cancellation', () => {
  it('fires listeners and followers once, with the reason, and unfollow detaches', () => {
    const parent = new Cancellation()
    const child = new Cancellation()
    const detached = new Cancellation()
    const calls: string[] = []
    const listener = () => calls.push('listener')
    parent.once('abort', listener)
    parent.once('abort', () => calls.push('second'))
    parent.removeListener('abort', listener)
    child.follow(parent)
    detached.follow(parent)
    detached.unfollow(parent)
    parent.abort('timeout')
    parent.abort('cancelled')
    expect(calls).toEqual(['second'])
    expect(child).toMatchObject({ aborted: true, reason: 'timeout' })
    expect(detached.aborted).toBe(false)
    const late = new Cancellation()
    late.follow(parent)
    expect(late).toMatchObject({ aborted: true, reason: 'timeout' })
  })
})

describe('ReadableSink', () => {
  it('hands a failure to its reader, and throws nothing at the process when nobody reads it', async () => {
    const read = new ReadableSink()
    read.push(Buffer.from('data: {}\n\n'))
    read.fail(new Error('the socket closed'))
    await expect((async () => {
      for await (const _ of read.body) continue
    })()).rejects.toThrow('the socket closed')
    new ReadableSink().fail(new Error('nobody reads this one'))
    // An unhandled 'error' event would surface here as an uncaught exception (vitest fails the run).
    await new Promise((resolve) => setTimeout(resolve, 10))
  })

  it('cancels the upstream when its reader stops early, and not once the body has ended', async () => {
    const early = new ReadableSink()
    let cancels = 0
    early.cancel = () => cancels++
    early.push(Buffer.from('one'))
    early.push(Buffer.from('two'))
    for await (const _ of early.body) break
    expect(cancels).toBe(1)
    const whole = new ReadableSink()
    whole.cancel = () => cancels++
    whole.push(Buffer.from('one'))
    whole.end()
    for await (const _ of whole.body) continue
    expect(cancels).toBe(1)
  })
})
