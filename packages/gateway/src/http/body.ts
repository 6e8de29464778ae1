/** Reads a request body straight off Node's IncomingMessage: a WHATWG Request per request cost more than the rest of the path. */
import type { IncomingMessage } from 'node:http'
import { GatewayError } from '../errors.ts'

/** The whole body as UTF-8 text; 413 when it is over `limit` bytes. */
export function readBody(incoming: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(incoming.headers['content-length'])
  if (declared > limit) return Promise.reject(tooLarge(limit))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let over = false
    incoming.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) over = true
      // Keep draining past the limit, so the 413 reaches a client still sending.
      if (!over) chunks.push(chunk)
    })
    incoming.once('end', () => (over ? reject(tooLarge(limit)) : resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'))))
    incoming.once('error', (error) => reject(new GatewayError('invalid_request', `The request body could not be read: ${error.message}`)))
  })
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('request_too_large', `The request body is larger than this gateway accepts (${limit} bytes). Send a smaller request, or raise server.max_request_body_bytes in config.json.`)
}

/** Deepest nesting of arrays and objects a JSON body may have (far beyond any real chat request). */
export const MAX_JSON_DEPTH = 64

/** JSON.parse after a linear depth scan: a body nested too deep is a 400 before anything recursive can run out of stack. */
export function parseJsonBody(text: string): unknown {
  if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new GatewayError('invalid_json', `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep; flatten it.`)
  }
  return parseJson(text)
}

/** JSON.parse, its failure a 400 `invalid_json` (the admin API's bodies too). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new GatewayError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`)
  }
}

/** The deepest nesting of `[` and `{` outside strings, stopping once past `limit`. Malformed text is left to JSON.parse. */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0
  let deepest = 0
  const length = text.length
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index)
    if (code === 0x22 /* " */) {
      // Skip the string: find its closing quote, one not escaped by an odd run of backslashes.
      let end = text.indexOf('"', index + 1)
      while (end > 0) {
        let slashes = 0
        while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++
        if (slashes % 2 === 0) break
        end = text.indexOf('"', end + 1)
      }
      if (end < 0) return deepest
      index = end
    } else if (code === 0x7b /* { */ || code === 0x5b /* [ */) {
      if (++depth > deepest) {
        deepest = depth
        if (deepest > limit) return deepest
      }
    } else if (code === 0x7d /* } */ || code === 0x5d /* ] */) {
      depth--
    }
  }
  return deepest
}
