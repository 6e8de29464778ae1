/** Where a request comes from: the socket's address, the Host it was sent to (DNS rebinding), proxy headers, the browser's Origin. */
import type { IncomingHttpHeaders } from 'node:http'

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address
  return plain === '::1' || plain.startsWith('127.')
}

/** Headers a reverse proxy adds; any of them means the socket's address is not the client's. */
export const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip'] as const

/** The first proxy header the request carries, or null. */
export function proxyHeader(headers: IncomingHttpHeaders): string | null {
  for (const name of PROXY_HEADERS) if (headers[name] !== undefined) return name
  return null
}

/**
 * True when Host names this node by a loopback name: 127.x.x.x, localhost or [::1], with the
 * port the node listens on (or none when that is 80).
 */
export function isLoopbackHost(host: string | undefined, localPort: number | undefined): boolean {
  if (host === undefined || host === '') return false
  let name: string
  let port: string
  if (host.startsWith('[')) {
    const close = host.indexOf(']')
    if (close < 0) return false
    name = host.slice(1, close)
    port = host.slice(close + 1)
  } else {
    const colon = host.lastIndexOf(':')
    name = colon < 0 ? host : host.slice(0, colon)
    port = colon < 0 ? '' : host.slice(colon)
  }
  name = name.toLowerCase()
  if (name !== 'localhost' && name !== '::1' && !/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)) return false
  if (port === '') return localPort === 80
  return port === `:${localPort}`
}

/** A loopback caller, sent to a loopback Host, with no proxy in between: what no-token mode serves. */
export function isLocalCaller(remoteAddress: string | undefined, localPort: number | undefined, headers: IncomingHttpHeaders): boolean {
  return isLoopback(remoteAddress) && isLoopbackHost(headers.host, localPort) && proxyHeader(headers) === null
}

/** Why a local-only surface refused a request, in words that say what to do. */
export function notLocalReason(remoteAddress: string | undefined, localPort: number | undefined, headers: IncomingHttpHeaders): string {
  if (!isLoopback(remoteAddress)) return 'the caller is not on loopback'
  const proxy = proxyHeader(headers)
  if (proxy !== null) return `the request came through a proxy (it carries ${proxy})`
  return `Host "${headers.host ?? ''}" is not this node's loopback address (127.0.0.1, localhost or [::1] with port ${localPort})`
}

/** Checks a browser's Origin: none passes; else it must be this node's own (as Host says) or in allowed_origins. */
export function checkOrigin(origin: string | undefined, host: string | undefined, allowed: ReadonlySet<string>): 'none' | 'same' | 'allowed' | 'refused' {
  if (origin === undefined) return 'none'
  if (allowed.has(origin)) return 'allowed'
  if (origin === 'null' || host === undefined) return 'refused'
  const scheme = origin.indexOf('://')
  if (scheme < 0) return 'refused'
  return origin.slice(scheme + 3).toLowerCase() === host.toLowerCase() ? 'same' : 'refused'
}
