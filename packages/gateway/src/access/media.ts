/** What a request body is: only JSON is taken (a cross-site "simple" POST is text/plain or a form). */
import type { IncomingHttpHeaders } from 'node:http'

/** True when the request carries a body (a length above zero, or a chunked one). */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length']
  return (length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined
}

/** True for `application/json` and `application/<x>+json`, parameters allowed. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(';')
  const type = (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase()
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}
