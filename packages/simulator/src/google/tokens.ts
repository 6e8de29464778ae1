/**
 * Google's OAuth2 token endpoint for service accounts (`POST /token`, the JWT-bearer grant of
 * RFC 7523): the assertion's RS256 signature is checked with the simulator's public key, and the
 * access token it issues is what Vertex requests must carry until it expires.
 */
import { createPublicKey, randomBytes, verify } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isFields, parseJson, readBody } from '../dialects/dialect.ts'
import { SIMULATOR_PRIVATE_KEY } from './service-account.ts'

/** Google's own token URL: the audience a service account's assertion names. */
export const GOOGLE_TOKEN_AUDIENCE = 'https://oauth2.googleapis.com/token'

/** What assertions are verified with: the public half of the simulator's key pair. */
const PUBLIC_KEY = createPublicKey(SIMULATOR_PRIVATE_KEY)

/** Tokens kept at most; past it, expired ones go, then the oldest. */
const MAX_TOKENS = 10_000

/** The access tokens the endpoint issued, and how many it issued per service account. */
export class TokenBook {
  /** Each token's service account and expiry (epoch ms). */
  private readonly tokens = new Map<string, { email: string; expiresAt: number }>()
  /** Tokens issued since the simulator started. */
  issued = 0

  constructor(private readonly lifetimeSeconds: number) {}

  issue(email: string, now: number): { token: string; expiresIn: number } {
    if (this.tokens.size >= MAX_TOKENS) {
      for (const [token, entry] of this.tokens) if (entry.expiresAt <= now) this.tokens.delete(token)
      if (this.tokens.size >= MAX_TOKENS) this.tokens.delete(this.tokens.keys().next().value as string)
    }
    this.issued += 1
    const token = `ya29.sim-${this.issued}-${randomBytes(12).toString('base64url')}`
    this.tokens.set(token, { email, expiresAt: now + this.lifetimeSeconds * 1000 })
    return { token, expiresIn: this.lifetimeSeconds }
  }

  lookup(token: string) {
    return this.tokens.get(token)
  }
}

function reply(response: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value)
  response.writeHead(status, ['content-type', 'application/json; charset=utf-8', 'cache-control', 'no-store', 'content-length', String(Buffer.byteLength(body))])
  response.end(body)
}

function decodePart(part: string | undefined): Record<string, unknown> | undefined {
  if (part === undefined) return undefined
  const value = parseJson(Buffer.from(part, 'base64url').toString('utf8'))
  return isFields(value) ? value : undefined
}

/** Why an assertion is refused, in Google's words, or the service account it names. */
export function checkAssertion(assertion: string, nowMs: number): { email: string } | { refusal: string } {
  const [headerPart, payloadPart, signaturePart] = assertion.split('.')
  const header = decodePart(headerPart)
  const payload = decodePart(payloadPart)
  if (header === undefined || payload === undefined || signaturePart === undefined) return { refusal: 'Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.' }
  if (header.alg !== 'RS256') return { refusal: 'Invalid JWT Signature.' }
  if (!verify('RSA-SHA256', Buffer.from(`${headerPart}.${payloadPart}`), PUBLIC_KEY, Buffer.from(signaturePart, 'base64url'))) return { refusal: 'Invalid JWT Signature.' }
  const now = nowMs / 1000
  if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number' || payload.exp < now - 300 || payload.iat > now + 300 || payload.exp - payload.iat > 3600) {
    return { refusal: 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.' }
  }
  if (payload.aud !== GOOGLE_TOKEN_AUDIENCE) return { refusal: 'Invalid JWT: Failed audience check.' }
  if (typeof payload.iss !== 'string' || !payload.iss.includes('@')) return { refusal: 'Invalid JWT: No valid issuer.' }
  if (typeof payload.scope !== 'string' || payload.scope.length === 0) return { refusal: 'Invalid JWT: No valid scope.' }
  return { email: payload.iss }
}

/** Answers `POST /token`: a form with `grant_type` and `assertion`. */
export function handleToken(tokens: TokenBook, request: IncomingMessage, response: ServerResponse): void {
  readBody(request, (body) => {
    if (body.length > 64_000) return request.destroy()
    const form = new URLSearchParams(body)
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      return reply(response, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' + (form.get('grant_type') ?? '') })
    }
    const checked = checkAssertion(form.get('assertion') ?? '', Date.now())
    if ('refusal' in checked) return reply(response, 400, { error: 'invalid_grant', error_description: checked.refusal })
    const issued = tokens.issue(checked.email, Date.now())
    reply(response, 200, { access_token: issued.token, expires_in: issued.expiresIn, token_type: 'Bearer' })
  })
}
