/**
 * OAuth2 access tokens for Vertex AI from a service account, through google-auth-library's JWT
 * client (it signs, exchanges, caches and refreshes, one refresh at a time). Ours: the account's
 * own `token_uri` is honoured (the library always posts to Google's), and the refresh margin is a
 * quarter of each token's lifetime, at most the library's 5 minutes.
 */
import type { JWT } from 'google-auth-library'

/** Google's token endpoint: where the library sends assertions, and their audience. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token'

/** The scope Vertex AI calls need. */
const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'

/** The library's own margin, kept for hour-long tokens. */
const MAX_REFRESH_MARGIN_MS = 5 * 60 * 1000

/** Clients past this many (a config churning credentials) start the cache over. */
const MAX_CACHED_CLIENTS = 256

/** The fields of a service-account JSON we use. */
export interface ServiceAccount {
  client_email: string
  private_key: string
  private_key_id?: string
  project_id?: string
  token_uri?: string
}

/** Parses a service-account JSON text; throws an Error saying what is missing. */
export function parseServiceAccount(text: string): ServiceAccount {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new Error('the service-account credentials are not JSON (paste the key file Google Cloud downloads)')
  }
  const record = typeof parsed === 'object' && parsed !== null ? parsed as Record<string, unknown> : {}
  if (typeof record.client_email !== 'string' || typeof record.private_key !== 'string') throw new Error('the service-account credentials need "client_email" and "private_key"')
  return record as unknown as ServiceAccount
}

/** Why a token could not be had: the token endpoint's refusal (a credential problem) or a network failure. */
export class TokenError extends Error {
  override readonly name = 'TokenError'
  constructor(message: string, readonly status: number) {
    super(message)
  }
}

/**
 * google-auth-library, loaded by the first token asked for: a node with no Vertex key never
 * loads it (issue 38, item 3: about 2 MB of heap).
 */
let library: Promise<typeof import('google-auth-library')> | undefined

/** One service account's tokens. */
export class TokenSource {
  private client: JWT | undefined
  private expiry: number | undefined

  constructor(private readonly account: ServiceAccount) {}

  private async jwt(): Promise<JWT> {
    if (this.client !== undefined) return this.client
    const { JWT } = await (library ??= import('google-auth-library'))
    if (this.client !== undefined) return this.client
    const account = this.account
    const keyId = account.private_key_id !== undefined ? { keyId: account.private_key_id } : {}
    const client = new JWT({ email: account.client_email, key: account.private_key, ...keyId, scopes: [CLOUD_PLATFORM_SCOPE] })
    if (account.token_uri !== undefined && account.token_uri !== GOOGLE_TOKEN_URL) {
      const target = new URL(account.token_uri)
      client.transporter.interceptors.request.add({
        resolved: async (options) => {
          if (options.url.href === GOOGLE_TOKEN_URL) options.url = target
          return options
        },
      })
    }
    this.client = client
    return client
  }

  /** A live access token: the cached one, or a fresh one when it is within its refresh margin. `force` skips the cache. */
  async token(force = false): Promise<string> {
    const client = await this.jwt()
    if (force) client.credentials = { ...client.credentials, expiry_date: 1 }
    let token: string | null | undefined
    try {
      token = (await client.getAccessToken()).token
    } catch (error) {
      const response = (error as { response?: { status?: unknown } }).response
      const code = (error as { code?: unknown }).code
      // A private key that cannot sign (not PEM, wrong type) is the key's own fault, like a refusal.
      const unusableKey = response === undefined && typeof code === 'string' && code.startsWith('ERR_OSSL')
      const status = typeof response?.status === 'number' ? response.status : unusableKey ? 400 : 0
      throw new TokenError(`the service account's token request failed: ${error instanceof Error ? error.message : String(error)}`, status)
    }
    if (typeof token !== 'string' || token === '') throw new TokenError('the token endpoint answered without an access token', 0)
    const expiry = client.credentials.expiry_date
    // Measured once per token, just after it came: its lifetime, not what is left of it.
    if (typeof expiry === 'number' && expiry !== this.expiry) {
      this.expiry = expiry
      const lifetime = expiry - Date.now()
      client.eagerRefreshThresholdMillis = Math.max(0, Math.min(MAX_REFRESH_MARGIN_MS, Math.floor(lifetime / 4)))
    }
    return token
  }
}

const sources = new Map<string, TokenSource>()

/** The token source of a service account, kept while its credentials are. */
export function tokenSourceFor(credentials: string): TokenSource {
  let source = sources.get(credentials)
  if (source === undefined) {
    source = new TokenSource(parseServiceAccount(credentials))
    if (sources.size >= MAX_CACHED_CLIENTS) sources.clear()
    sources.set(credentials, source)
  }
  return source
}
