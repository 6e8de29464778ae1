/** SigV4 for Bedrock runtime calls: one signer per credential set, kept while the key is. */
import { NodeSha256 } from './hash.ts'
import type { SignatureV4 } from '@smithy/signature-v4'
import type { BedrockKeyConfig } from '../types.ts'

/** Signers past this many (a config churning credentials) start the cache over. */
const MAX_CACHED_SIGNERS = 256

const signers = new Map<string, SignatureV4>()

/** A key's Bedrock settings with the credentials it signs with. */
export type SigningConfig = BedrockKeyConfig & { access_key: string; secret_key: string }

/**
 * The signing library, loaded by the first Bedrock request: a node with no Bedrock key never
 * loads it (issue 38, item 3: about 1 MB of heap).
 */
let library: Promise<typeof import('@smithy/signature-v4')> | undefined

async function signerFor(config: SigningConfig): Promise<SignatureV4> {
  const cacheKey = `${config.access_key}\u0000${config.secret_key}\u0000${config.session_token ?? ''}\u0000${config.region}`
  let signer = signers.get(cacheKey)
  if (signer === undefined) {
    const { SignatureV4 } = await (library ??= import('@smithy/signature-v4'))
    signer = signers.get(cacheKey)
    if (signer !== undefined) return signer
    signer = new SignatureV4({
      service: 'bedrock',
      region: config.region,
      sha256: NodeSha256,
      credentials: {
        accessKeyId: config.access_key,
        secretAccessKey: config.secret_key,
        ...(config.session_token !== undefined ? { sessionToken: config.session_token } : {}),
      },
    })
    if (signers.size >= MAX_CACHED_SIGNERS) signers.clear()
    signers.set(cacheKey, signer)
  }
  return signer
}

/** Signs a POST of `body` to `origin` + `path`: our headers plus SigV4's (`host` is signed, but left for the HTTP client to send). */
export async function signedHeaders(config: SigningConfig, origin: string, path: string, headers: Record<string, string>, body: string, date: Date): Promise<Record<string, string>> {
  const url = new URL(path, origin)
  const query: Record<string, string> = {}
  for (const [name, value] of url.searchParams) query[name] = value
  const signed = await (await signerFor(config)).sign({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port !== '' ? { port: Number(url.port) } : {}),
    path: url.pathname,
    query,
    headers: { ...headers, host: url.host },
    body,
  }, { signingDate: date })
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(signed.headers)) if (name !== 'host') out[name] = value
  return out
}
