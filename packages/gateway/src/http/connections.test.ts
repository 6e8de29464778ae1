import { connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createGuardedServer } from './connections.ts'

const LIMITS = { headersTimeoutMs: 60_000, requestTimeoutMs: 60_000, maxConnections: 2 }
const closers: (() => void)[] = []
afterEach(() => {
  for (const close of closers.splice(0)) close()
})

/** A raw client connection, with whatever it has read so far and whether it was closed. */
async function client(port: number): Promise<{ socket: Socket; read: () => string; closed: () => boolean }> {
  const socket = connect(port, '127.0.0.1')
  let text = ''
  let closed = false
  socket.on('data', (chunk) => (text += chunk.toString()))
  socket.on('close', () => (closed = true))
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  closers.push(() => socket.destroy())
  return { socket, read: () => text, closed: () => closed }
}

const until = async (check: () => boolean, what: string) => {
  const deadline = Date.now() + 5_000
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('the connection cap', () => {
  it('makes room by closing an idle keep-alive connection whose answer is done, never one being answered', async () => {
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let evicted = 0
    const server = createGuardedServer((request, response) => {
      if (request.url === '/slow') void held.then(() => response.end('slow done'))
      else response.end('quick')
    }, LIMITS, () => evicted++)
    let connections = 0
    server.on('connection', () => connections++)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push(() => server.close())
    const port = (server.address() as AddressInfo).port

    // The first connection is being answered (its request is in, its answer is held back).
    const answering = await client(port)
    answering.socket.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\n')
    // The second was answered and stays open (keep-alive), idle.
    const idle = await client(port)
    idle.socket.write('GET /quick HTTP/1.1\r\nhost: x\r\n\r\n')
    await until(() => idle.read().includes('quick'), 'the quick answer')
    await until(() => connections === 2, 'two open connections')

    // A third connection needs room: the idle one goes, the one being answered stays.
    const newcomer = await client(port)
    await until(() => idle.closed(), 'the idle connection to be closed')
    expect(answering.closed()).toBe(false)
    expect(evicted).toBe(1)
    release()
    await until(() => answering.read().includes('slow done'), 'the held answer')
    newcomer.socket.write('GET /quick HTTP/1.1\r\nhost: x\r\n\r\n')
    await until(() => newcomer.read().includes('quick'), "the newcomer's answer")
  })

  it('turns the newcomer away when every other connection is being answered', async () => {
    let requests = 0
    let evicted = 0
    const server = createGuardedServer(() => void requests++, LIMITS, () => evicted++) // never answers
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push(() => server.close())
    const port = (server.address() as AddressInfo).port
    const first = await client(port)
    const second = await client(port)
    first.socket.write('GET /a HTTP/1.1\r\nhost: x\r\n\r\n')
    second.socket.write('GET /b HTTP/1.1\r\nhost: x\r\n\r\n')
    await until(() => requests === 2, 'both requests to arrive')
    const third = await client(port)
    await until(() => third.closed(), 'the newcomer to be closed')
    expect(first.closed() || second.closed()).toBe(false)
    expect(evicted).toBe(1)
  })
})
