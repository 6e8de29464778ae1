/**
 * AWS event-stream framing (application/vnd.amazon.eventstream), written from AWS's
 * description of the format rather than with the gateway's codec, so a test that decodes these
 * frames with @smithy/eventstream-codec checks the codec against the format:
 *
 *   total length (u32) | headers length (u32) | prelude CRC32 (u32) | headers | payload | message CRC32 (u32)
 *
 * every number big-endian; a header is name length (u8), name, value type (u8; 7 = string),
 * value length (u16) and value. The message CRC covers everything before it (CRC-32, IEEE 802.3).
 */
import { crc32 } from 'node:zlib'

/** Header type 7: a UTF-8 string. */
const STRING_TYPE = 7

/** A ConverseStream event frame, or (`exception`) a modelled exception frame as Bedrock sends one mid-stream; string headers are the only kind Bedrock's runtime sends. */
export function eventFrame(type: string, payload: Record<string, unknown>, messageType: 'event' | 'exception' = 'event'): Buffer {
  const headers = { [`:${messageType}-type`]: type, ':content-type': 'application/json', ':message-type': messageType }
  const headerBytes = Buffer.concat(Object.entries(headers).flatMap(([name, value]) => {
    const valueBytes = Buffer.from(value, 'utf8')
    const length = Buffer.alloc(2)
    length.writeUInt16BE(valueBytes.length)
    return [Buffer.from([Buffer.byteLength(name)]), Buffer.from(name, 'utf8'), Buffer.from([STRING_TYPE]), length, valueBytes]
  }))
  const body = Buffer.from(JSON.stringify(payload), 'utf8')
  const total = 12 + headerBytes.length + body.length + 4
  const frame = Buffer.alloc(total)
  frame.writeUInt32BE(total, 0)
  frame.writeUInt32BE(headerBytes.length, 4)
  frame.writeUInt32BE(crc32(frame.subarray(0, 8)), 8)
  headerBytes.copy(frame, 12)
  body.copy(frame, 12 + headerBytes.length)
  frame.writeUInt32BE(crc32(frame.subarray(0, total - 4)), total - 4)
  return frame
}
