/**
 * SigV4 verification, written from AWS's specification (not with the gateway's signer, so a
 * test that signs with @smithy/signature-v4 and passes here checks the signer against the
 * spec). The simulator's key pair: any access key id is known, and its secret is
 * `simulatorSecretKey(accessKeyId)`; a request signed with another secret fails as it would
 * at AWS.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'

/** The secret the simulator holds for an access key id. */
export function simulatorSecretKey(accessKeyId: string): string {
  return `${accessKeyId}/simulator-secret`
}

/** How far `x-amz-date` may be from the simulator's clock, as at AWS (15 minutes). */
const MAX_SKEW_MS = 15 * 60 * 1000

/** A parsed `Authorization: AWS4-HMAC-SHA256 ...` header. */
export interface SigV4Authorization {
  accessKeyId: string
  date: string
  region: string
  service: string
  signedHeaders: string[]
  signature: string
}

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;_.-]+),\s*Signature=([0-9a-f]{64})$/

/** Reads the SigV4 authorization header, or undefined when it is absent or not SigV4. */
export function readSigV4(headers: IncomingHttpHeaders): SigV4Authorization | undefined {
  const value = headers.authorization
  if (typeof value !== 'string') return undefined
  const match = AUTHORIZATION.exec(value)
  if (match === null) return undefined
  return { accessKeyId: match[1]!, date: match[2]!, region: match[3]!, service: match[4]!, signedHeaders: match[5]!.split(';'), signature: match[6]! }
}

/** RFC 3986 encoding as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
function escape(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`)
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

function hmac(key: Buffer | string, text: string): Buffer {
  return createHmac('sha256', key).update(text, 'utf8').digest()
}

/** Why a request's signature was refused, in AWS's words, or undefined when it is good. */
export type SigV4Verdict =
  | undefined
  | { kind: 'mismatch' | 'expired' | 'malformed'; message: string }

/**
 * Checks a request's SigV4 signature against the simulator's secret for its access key id.
 * `rawUrl` is the request target as it arrived (path and query, still percent-encoded).
 */
export function verifySigV4(method: string, rawUrl: string, headers: IncomingHttpHeaders, body: string, auth: SigV4Authorization, now: number): SigV4Verdict {
  const amzDate = headers['x-amz-date']
  if (typeof amzDate !== 'string' || !/^\d{8}T\d{6}Z$/.test(amzDate) || !amzDate.startsWith(auth.date)) {
    return { kind: 'malformed', message: "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header." }
  }
  const signedAt = Date.UTC(Number(amzDate.slice(0, 4)), Number(amzDate.slice(4, 6)) - 1, Number(amzDate.slice(6, 8)), Number(amzDate.slice(9, 11)), Number(amzDate.slice(11, 13)), Number(amzDate.slice(13, 15)))
  if (Math.abs(now - signedAt) > MAX_SKEW_MS) {
    return { kind: 'expired', message: `Signature expired: ${amzDate} is now earlier than ${new Date(now - MAX_SKEW_MS).toISOString().replace(/[-:]|\.\d{3}/g, '')}` }
  }
  if (!auth.signedHeaders.includes('host')) return { kind: 'malformed', message: "'Host' must be a signed header." }
  const payloadHash = sha256Hex(body)
  const claimed = headers['x-amz-content-sha256']
  if (typeof claimed === 'string' && claimed !== payloadHash && claimed !== 'UNSIGNED-PAYLOAD') {
    return { kind: 'mismatch', message: 'The provided x-amz-content-sha256 header does not match what was computed.' }
  }
  const queryAt = rawUrl.indexOf('?')
  const path = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt)
  const query = queryAt === -1 ? '' : rawUrl.slice(queryAt + 1)
  // Non-S3 services sign the path encoded once more, segment by segment.
  const canonicalPath = path.split('/').map(escape).join('/')
  const canonicalQuery = query === ''
    ? ''
    : query.split('&').map((pair) => {
      const equals = pair.indexOf('=')
      const name = decodeURIComponent(equals === -1 ? pair : pair.slice(0, equals))
      const value = equals === -1 ? '' : decodeURIComponent(pair.slice(equals + 1))
      return [escape(name), escape(value)] as const
    }).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map(([name, value]) => `${name}=${value}`).join('&')
  let canonicalHeaders = ''
  for (const name of auth.signedHeaders) {
    const value = headers[name]
    if (value === undefined) return { kind: 'mismatch', message: `The request signature we calculated does not match the signature you provided. Signed header ${name} is missing.` }
    const text = Array.isArray(value) ? value.join(',') : value
    canonicalHeaders += `${name}:${text.trim().replace(/\s+/g, ' ')}\n`
  }
  const canonicalRequest = [method, canonicalPath, canonicalQuery, canonicalHeaders, auth.signedHeaders.join(';'), typeof claimed === 'string' ? claimed : payloadHash].join('\n')
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n')
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${simulatorSecretKey(auth.accessKeyId)}`, auth.date), auth.region), auth.service), 'aws4_request')
  const expected = Buffer.from(hmac(signingKey, stringToSign).toString('hex'))
  const given = Buffer.from(auth.signature)
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { kind: 'mismatch', message: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.' }
  }
  return undefined
}
