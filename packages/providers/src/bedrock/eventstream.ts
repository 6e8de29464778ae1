/**
 * AWS event-stream framing, as ConverseStream answers: the body's bytes are cut into whole
 * frames by their length prelude, and each frame is checked (both CRCs) and decoded by
 * @smithy/eventstream-codec, the codec the AWS SDKs use.
 */
import { EventStreamCodec } from '@smithy/eventstream-codec'
import { fromUtf8, toUtf8 } from '@smithy/util-utf8'
import { TranslationError } from '../anthropic/errors.ts'
import { asRecord } from '../anthropic/messages.ts'

const codec = new EventStreamCodec(toUtf8, fromUtf8)

/** Frames larger than this are refused as a broken stream (Bedrock's are a few hundred bytes). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024

/** One decoded frame: its `:message-type`, the event or exception type it names, and its JSON payload. */
export interface StreamFrame {
  /** `event`, `exception` (a modelled error, e.g. throttlingException) or `error`. */
  messageType: string
  /** `:event-type`, `:exception-type` or `:error-code`. */
  type: string
  payload: Record<string, unknown>
  /** `:error-message` of an `error` frame. */
  errorMessage?: string
}

function header(headers: Record<string, { type: string; value: unknown }>, name: string): string | undefined {
  const entry = headers[name]
  return entry !== undefined && typeof entry.value === 'string' ? entry.value : undefined
}

function decodeFrame(bytes: Uint8Array): StreamFrame {
  let message
  try {
    message = codec.decode(bytes)
  } catch (error) {
    throw new TranslationError('upstream_malformed', `Bedrock's event stream is malformed: ${error instanceof Error ? error.message : String(error)}.`)
  }
  const headers = message.headers as Record<string, { type: string; value: unknown }>
  const messageType = header(headers, ':message-type') ?? 'event'
  const type = header(headers, messageType === 'exception' ? ':exception-type' : messageType === 'error' ? ':error-code' : ':event-type') ?? ''
  let payload: Record<string, unknown> = {}
  if (message.body.length > 0) {
    try {
      payload = asRecord(JSON.parse(toUtf8(message.body))) ?? {}
    } catch {
      throw new TranslationError('upstream_malformed', `Bedrock's ${type || 'unnamed'} event carries a payload that is not JSON.`)
    }
  }
  const errorMessage = header(headers, ':error-message')
  return { messageType, type, payload, ...(errorMessage !== undefined ? { errorMessage } : {}) }
}

/** The frames of an event-stream body, in order; a frame failing its checksums or a body ending inside one is `upstream_malformed`. */
export async function* readEventStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<StreamFrame> {
  let pending: Buffer = Buffer.alloc(0)
  for await (const chunk of body) {
    pending = pending.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([pending, chunk])
    while (pending.length >= 4) {
      const total = pending.readUInt32BE(0)
      if (total < 16 || total > MAX_FRAME_BYTES) throw new TranslationError('upstream_malformed', `Bedrock's event stream is malformed: a frame claims ${total} bytes.`)
      if (pending.length < total) break
      yield decodeFrame(pending.subarray(0, total))
      pending = pending.subarray(total)
    }
  }
  if (pending.length > 0) throw new TranslationError('upstream_malformed', "Bedrock's event stream ended inside a frame.")
}
