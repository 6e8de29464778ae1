/**
 * Slow-client protection for the node's HTTP server (issue 18): a client has
 * `headersTimeoutMs` to send its headers and `requestTimeoutMs` to send the whole request
 * (Node answers 408 and closes), checked every second; and at most `maxConnections` are
 * open. Past the cap a new connection does not wait or get refused: the oldest connection
 * not answering a request (idle keep-alive, or one still trickling its headers or body) is
 * closed to make room, so a flood of idle or slow connections cannot lock out a client that
 * sends a real request. Responses are not bounded here: a stream may run as long as the
 * upstream does.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** The limits, from `server.*` in config.json. */
export interface ConnectionLimits {
  headersTimeoutMs: number
  requestTimeoutMs: number
  maxConnections: number
}

/** What the guard counts, for /metrics and tests. */
export interface ConnectionStats {
  open: number
  /** Connections closed to make room under the cap. */
  evicted: number
}

/** An HTTP server with the limits applied. */
export function createGuardedServer(listener: RequestListener, limits: ConnectionLimits, onEvicted: () => void = () => {}): { server: Server; stats(): ConnectionStats } {
  const server = createServer(
    { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: 1_000 },
    listener,
  )
  // Socket -> the request in progress on it (null: none). A Map iterates in insertion order: oldest first.
  const open = new Map<Socket, IncomingMessage | null>()
  let evicted = 0
  const evict = (socket: Socket) => {
    open.delete(socket)
    socket.destroy()
    evicted++
    onEvicted()
  }
  server.on('connection', (socket: Socket) => {
    open.set(socket, null)
    socket.once('close', () => open.delete(socket))
    if (open.size <= limits.maxConnections) return
    // A connection with no request, or one whose request has not fully arrived (headers or
    // body still trickling), can go; one whose request is being answered is kept.
    for (const [candidate, request] of open) {
      if (candidate === socket || (request !== null && request.complete)) continue
      return evict(candidate)
    }
    // Every other connection is answering a request: the newcomer is the one turned away.
    evict(socket)
  })
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket
    if (!open.has(socket)) return
    open.set(socket, request)
    response.once('close', () => {
      if (open.get(socket) === request) open.set(socket, null)
    })
  })
  return { server, stats: () => ({ open: open.size, evicted }) }
}
