/**
 * Admin API access (issue 3). With tokens configured, every admin route needs
 * `Authorization: Bearer <token>`: a `view` token reads, an `update` token does everything.
 * With none configured, the admin API answers loopback clients only.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import type { HttpBindings } from '@hono/node-server'
import { GatewayError } from '../errors.ts'

export type AdminRole = 'view' | 'update'

export interface AdminToken {
  token: string
  role: AdminRole
}

/**
 * Parses SWITCHBOARD_ADMIN_TOKENS: `token:role` pairs separated by commas, role `view` or
 * `update`. Throws with a sentence naming the bad entry (by position, never by its text).
 */
export function parseAdminTokens(text: string | undefined): AdminToken[] {
  if (text === undefined || text.trim() === '') return []
  return text.split(',').map((entry, index) => {
    const separator = entry.lastIndexOf(':')
    const token = entry.slice(0, separator).trim()
    const role = entry.slice(separator + 1).trim()
    if (separator <= 0 || (role !== 'view' && role !== 'update')) {
      throw new Error(`SWITCHBOARD_ADMIN_TOKENS entry ${index + 1} must look like <token>:view or <token>:update`)
    }
    if (token.length < 16) throw new Error(`SWITCHBOARD_ADMIN_TOKENS entry ${index + 1}: use a token of at least 16 characters`)
    return { token, role }
  })
}

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address
  return plain === '::1' || plain.startsWith('127.')
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/** The middleware guarding /api/*. */
export function adminAuth(tokens: readonly AdminToken[]): MiddlewareHandler<{ Bindings: HttpBindings }> {
  // Compare digests in constant time, so a token's prefix cannot be found by timing.
  const known = tokens.map((entry) => ({ digest: digest(entry.token), role: entry.role }))
  return async (context, next) => {
    const method = context.req.method
    const reading = method === 'GET' || method === 'HEAD'
    if (known.length === 0) {
      if (!isLoopback(context.env.incoming.socket.remoteAddress)) {
        throw new GatewayError('admin_forbidden', 'The admin API answers loopback clients only while no admin tokens are configured. Set SWITCHBOARD_ADMIN_TOKENS (token:role,...) to use it remotely.')
      }
      return next()
    }
    const header = context.req.header('authorization') ?? ''
    const match = /^Bearer\s+(.+)$/i.exec(header)
    if (!match) throw new GatewayError('admin_unauthorized', 'The admin API needs "Authorization: Bearer <admin token>".')
    const offered = digest(match[1]!.trim())
    const entry = known.find((candidate) => timingSafeEqual(candidate.digest, offered))
    if (!entry) throw new GatewayError('admin_unauthorized', 'That admin token is not known to this gateway.')
    if (!reading && entry.role !== 'update') throw new GatewayError('admin_forbidden', `A view token can only read; ${method} needs an update token.`)
    return next()
  }
}
