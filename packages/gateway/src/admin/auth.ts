/**
 * Admin API and dashboard access (issues 3 and 13), in order: a browser's Origin must be the
 * node's own or allowed (403), a body must be JSON (415), then a bearer token with the route's
 * role; with no tokens configured, only local callers (access/network.ts) are served.
 */
import type { MiddlewareHandler } from 'hono'
import type { HttpBindings } from '@hono/node-server'
import { hasBody, isJsonMediaType } from '../access/media.ts'
import { GatewayError } from '../errors.ts'
import { checkOrigin, isLocalCaller, notLocalReason } from '../access/network.ts'
import { allows, requiredRole, type Permission, AREAS } from '../access/roles.ts'
import { TokenMatcher, type AdminToken } from '../access/tokens.ts'

/** The Hono env of the admin API's routes: Node's request and response beside Hono's. */
export type HonoEnv = { Bindings: HttpBindings }

export interface AdminAuthInit {
  tokens: readonly AdminToken[]
  /** Origins (`https://dash.example.com`) besides the node's own that browsers may call from. */
  allowedOrigins?: readonly string[]
}

const HOW_TO_TOKENS = 'Set SWITCHBOARD_ADMIN_TOKENS (<token>:update,<token>:view; tokens of at least 16 characters) or admin.tokens in config.json, then send "Authorization: Bearer <token>".'
const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS'

/** The Origin and Host rules alone, for pages a browser loads (the dashboard): no token needed to load them. */
export function originGuard(init: AdminAuthInit): MiddlewareHandler<HonoEnv> {
  const allowed = new Set(init.allowedOrigins ?? [])
  return async (context, next) => {
    const headers = context.env.incoming.headers
    const origin = checkOrigin(headers.origin, headers.host, allowed)
    if (origin === 'refused') throw new GatewayError('origin_forbidden', `Requests from origin "${headers.origin}" are refused: it is not this node's own origin. To call the admin API from that page, add it to server.allowed_origins in config.json.`)
    if (context.req.method === 'OPTIONS') return preflight(origin === 'allowed' ? headers.origin : undefined)
    await next()
    if (origin === 'allowed') corsHeaders(context.res.headers, headers.origin!)
  }
}

/** The middleware guarding /api/* (and the dashboard's data). */
export function adminAuth(init: AdminAuthInit): MiddlewareHandler<HonoEnv> {
  const matcher = new TokenMatcher(init.tokens)
  const origins = originGuard(init)
  return (context, next) => origins(context, async () => {
    const incoming = context.env.incoming
    const headers = incoming.headers
    const method = context.req.method
    if (method !== 'GET' && method !== 'HEAD' && hasBody(headers) && !isJsonMediaType(headers['content-type'])) {
      throw new GatewayError('unsupported_media_type', `The admin API takes JSON bodies: send "content-type: application/json" (got ${headers['content-type'] === undefined ? 'none' : `"${headers['content-type']}"`}).`)
    }
    if (matcher.size === 0) {
      const localPort = incoming.socket.localPort
      if (!isLocalCaller(incoming.socket.remoteAddress, localPort, headers)) {
        throw new GatewayError('admin_forbidden', `No admin tokens are configured, so the admin API answers loopback callers only, and ${notLocalReason(incoming.socket.remoteAddress, localPort, headers)}. ${HOW_TO_TOKENS}`)
      }
    } else {
      const header = headers.authorization ?? ''
      const bearer = /^Bearer\s+(.+)$/i.exec(header)
      if (!bearer) throw new GatewayError('admin_unauthorized', `The admin API needs "Authorization: Bearer <admin token>". ${HOW_TO_TOKENS}`)
      const permissions = matcher.match(bearer[1]!.trim())
      if (permissions === null) throw new GatewayError('admin_unauthorized', 'That admin token is not known to this gateway.')
      checkRole(permissions, method, context.req.path)
    }
    await next()
  })
}

/** Throws admin_forbidden unless the token's permissions cover the route (route table in access/roles.ts). */
function checkRole(permissions: ReadonlySet<Permission>, method: string, path: string): void {
  const role = requiredRole(method, path)
  if (role === null) {
    // Not in the table: only a token with Update on every area gets through (to a 404, usually).
    if (AREAS.every((area) => allows(permissions, area, 'update'))) return
    throw new GatewayError('admin_forbidden', `${method} ${path} is not an admin route this token may use; it needs Update on every area.`)
  }
  if (!allows(permissions, role.area, role.level)) {
    throw new GatewayError('admin_forbidden', `${method} ${role.path} needs the ${role.area}.${role.level} role${role.level === 'update' ? '' : ' (or update)'}; this token does not have it.`)
  }
}

function preflight(allowedOrigin: string | undefined): Response {
  const headers = new Headers({ allow: ALLOWED_METHODS })
  if (allowedOrigin !== undefined) {
    corsHeaders(headers, allowedOrigin)
    headers.set('access-control-allow-methods', ALLOWED_METHODS)
    headers.set('access-control-allow-headers', 'authorization, content-type, x-api-key')
    headers.set('access-control-max-age', '600')
  }
  return new Response(null, { status: 204, headers })
}

function corsHeaders(headers: Headers, origin: string): void {
  headers.set('access-control-allow-origin', origin)
  headers.append('vary', 'Origin')
}
