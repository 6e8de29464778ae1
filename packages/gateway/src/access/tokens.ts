/**
 * Admin tokens: where they come from (config.json `admin.tokens`, SWITCHBOARD_ADMIN_TOKENS),
 * the 16-character minimum, and the constant-time match of an offered token.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { parsePermission, type Permission } from './roles.ts'

/** Shortest admin token accepted (docs/security.md, "Admin API access"). */
export const MIN_TOKEN_LENGTH = 16

/** One admin token and what it may do. */
export interface AdminToken {
  token: string
  permissions: Permission[]
}

/** Parses SWITCHBOARD_ADMIN_TOKENS (`token:view,token:providers.update+logs.view`); an error names a bad entry by position, never its text. */
export function parseAdminTokens(text: string | undefined): AdminToken[] {
  if (text === undefined || text.trim() === '') return []
  return text.split(',').map((entry, index) => {
    const separator = entry.lastIndexOf(':')
    const token = entry.slice(0, separator).trim()
    const permissions = separator <= 0 ? null : parseRoles(entry.slice(separator + 1).trim().split('+'))
    if (permissions === null) {
      throw new Error(`SWITCHBOARD_ADMIN_TOKENS entry ${index + 1} must look like <token>:view, <token>:update or <token>:<area>.<view|update>[+...] (areas: adaptive_routing, providers, logs, settings)`)
    }
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`SWITCHBOARD_ADMIN_TOKENS entry ${index + 1}: use a token of at least ${MIN_TOKEN_LENGTH} characters`)
    return { token, permissions }
  })
}

/** Turns role names (`view`, `update`, `providers.update`, ...) into permissions; null when one is unknown. */
export function parseRoles(roles: readonly string[]): Permission[] | null {
  const out = new Set<Permission>()
  for (const role of roles) {
    const permissions = parsePermission(role.trim())
    if (permissions === null) return null
    for (const permission of permissions) out.add(permission)
  }
  return out.size === 0 ? null : [...out]
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/** Matches offered tokens against the known ones in constant time. */
export class TokenMatcher {
  private readonly known: { digest: Buffer; permissions: ReadonlySet<Permission> }[]

  constructor(tokens: readonly AdminToken[]) {
    this.known = tokens.map((entry) => ({ digest: digest(entry.token), permissions: new Set(entry.permissions) }))
  }

  get size(): number {
    return this.known.length
  }

  /** The offered token's permissions, or null: every known digest is compared in constant time, so timing tells nothing. */
  match(offered: string): ReadonlySet<Permission> | null {
    const offeredDigest = digest(offered)
    let found: ReadonlySet<Permission> | null = null
    for (const candidate of this.known) {
      if (timingSafeEqual(candidate.digest, offeredDigest) && found === null) found = candidate.permissions
    }
    return found
  }
}
