/**
 * Slow clients (issue 18, item 4): a thousand connections that sit idle, trickle their
 * headers or trickle a body do not stop a real gateway process from serving normal
 * requests. Idle and slow connections are closed by the header and request timeouts (408),
 * and past `server.max_connections` the oldest one with no request in progress makes room.
 */
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess
const sockets: Socket[] = []
const timers: NodeJS.Timeout[] = []

beforeAll(async () => {
  simulator = await startSimulator()
  gateway = await startGateway({
    providers: { openai: { keys: [{ name: 'k', value: 'sk-slow-clients-1111', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } } },
    server: { headers_timeout_ms: 3_000, request_timeout_ms: 5_000, max_connections: 300 },
  })
})

afterAll(async () => {
  for (const timer of timers) clearInterval(timer)
  for (const socket of sockets) socket.destroy()
  await gateway?.stop()
  await simulator?.stop()
})

function open(kind: 'idle' | 'headers' | 'body'): Promise<Socket> {
  const { hostname, port } = new URL(gateway.url)
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => resolve(socket))
    socket.on('error', () => {})
    // Read what the server says (its 408, its close), or the socket never sees the end.
    socket.resume()
    sockets.push(socket)
    if (kind === 'headers') {
      socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n')
      timers.push(setInterval(() => socket.writable && socket.write('x'), 500))
    }
    if (kind === 'body') {
      socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{')
      timers.push(setInterval(() => socket.writable && socket.write(' '), 500))
    }
  })
}

async function chat(): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(15_000),
  })
  await response.arrayBuffer()
  return response.status
}

describe('a thousand idle or trickling connections', () => {
  it('do not stop normal requests being served, and are closed by the timeouts', async () => {
    const kinds = ['idle', 'headers', 'body'] as const
    const closed: Promise<void>[] = []
    const stillOpen = { idle: 0, headers: 0, body: 0 }
    for (let index = 0; index < 1_000; index++) {
      const socket = await open(kinds[index % 3]!)
      const kind = kinds[index % 3]!
      stillOpen[kind]++
      closed.push(new Promise((resolve) => socket.once('close', () => resolve(void stillOpen[kind]--))))
      // Normal requests interleaved with the flood are served all along.
      if (index % 100 === 99) expect(await chat()).toBe(200)
    }
    const statuses = await Promise.all(Array.from({ length: 20 }, () => chat()))
    expect(statuses.every((status) => status === 200)).toBe(true)
    // Every slow connection is gone within the request timeout (and the 1 s check interval).
    await Promise.race([Promise.all(closed), new Promise((_, reject) => setTimeout(() => reject(new Error(`slow connections still open after 20 s: ${JSON.stringify(stillOpen)}`)), 20_000))])
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
    expect(Number(/switchboard_http_connections_evicted_total (\d+)/.exec(metrics)?.[1])).toBeGreaterThan(0)
    expect(await chat()).toBe(200)
  }, 90_000)
})
