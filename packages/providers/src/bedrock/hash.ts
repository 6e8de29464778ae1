/**
 * SHA-256 and HMAC-SHA256 on node:crypto in the shape @smithy/signature-v4 takes: the pure-JS
 * @aws-crypto/sha256-js cost about twice the gateway's whole CPU of a Bedrock request (bench/README.md).
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto'

/** What the signer hands to a hash: text or bytes. */
type SourceData = string | ArrayBuffer | ArrayBufferView

function bytesOf(data: SourceData): Buffer | string {
  if (typeof data === 'string') return data
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  return Buffer.from(data)
}

/** SHA-256, or HMAC-SHA256 keyed by `secret`. */
export class NodeSha256 {
  private hash: Hash | Hmac

  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh()
  }

  update(data: SourceData): void {
    this.hash.update(bytesOf(data))
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()))
  }

  reset(): void {
    this.hash = this.fresh()
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(this.secret))
  }
}
