/**
 * Slow-client protection (issue 18): `headersTimeoutMs` for the headers and `requestTimeoutMs`
 * for the whole request (Node answers 408), and at most `maxConnections` open. Past the cap the
 * oldest connection not answering a request (idle, or still trickling its request) is closed to
 * make room, so idle or slow connections cannot lock out a real request. Responses are not bounded.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { GatewayConfig } from '../config/load.ts'

/** The limits, from `server.*` in config.json. */
export type ConnectionLimits = GatewayConfig['connections']

/** A response whose request has fully arrived and whose answer has not finished. */
function isAnswering(response: ServerResponse): boolean {
  return response.req.complete && !response.writableFinished && !response.destroyed
}

/** An HTTP server with the limits applied; `onEvicted` hears of each connection closed to make room. */
export function createGuardedServer(listener: RequestListener, limits: ConnectionLimits, onEvicted: () => void): Server {
  const server = createServer(
    { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: 1_000 },
    listener,
  )
  // Socket -> its latest response (null: no request yet). A Map iterates in insertion order: oldest first.
  const open = new Map<Socket, ServerResponse | null>()
  const evict = (socket: Socket) => {
    open.delete(socket)
    socket.destroy()
    onEvicted()
  }
  server.on('connection', (socket: Socket) => {
    open.set(socket, null)
    socket.once('close', () => open.delete(socket))
    if (open.size <= limits.maxConnections) return
    // A connection with no request, a request still trickling in, or an idle keep-alive can go.
    for (const [candidate, response] of open) {
      if (candidate === socket || (response !== null && isAnswering(response))) continue
      return evict(candidate)
    }
    // Every other connection is answering a request: the newcomer is the one turned away.
    evict(socket)
  })
  // No listener on the response (a once() per request): its state is read when a newcomer needs room.
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket
    if (open.has(socket)) open.set(socket, response)
  })
  return server
}
