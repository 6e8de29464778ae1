import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, type Simulator } from '../index.ts'
import { crc32 } from 'node:zlib'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())
beforeEach(() => simulator.clearRules())

const MODEL = 'anthropic.claude-3-haiku-20240307-v1:0'

/** Reads frames by the format's own rules, checking both CRCs; string headers only. */
function frames(bytes: Buffer): Array<{ headers: Record<string, string>; payload: any }> {
  const out = []
  let offset = 0
  while (offset < bytes.length) {
    const total = bytes.readUInt32BE(offset)
    const headersLength = bytes.readUInt32BE(offset + 4)
    expect(bytes.readUInt32BE(offset + 8)).toBe(crc32(bytes.subarray(offset, offset + 8)))
    expect(bytes.readUInt32BE(offset + total - 4)).toBe(crc32(bytes.subarray(offset, offset + total - 4)))
    const headers: Record<string, string> = {}
    let at = offset + 12
    while (at < offset + 12 + headersLength) {
      const nameLength = bytes.readUInt8(at)
      const name = bytes.toString('utf8', at + 1, at + 1 + nameLength)
      expect(bytes.readUInt8(at + 1 + nameLength)).toBe(7)
      const valueLength = bytes.readUInt16BE(at + 2 + nameLength)
      headers[name] = bytes.toString('utf8', at + 4 + nameLength, at + 4 + nameLength + valueLength)
      at += 4 + nameLength + valueLength
    }
    out.push({ headers, payload: JSON.parse(bytes.toString('utf8', at, offset + total - 4)) })
    offset += total
  }
  return out
}

function converseStream(body: unknown): Promise<Response> {
  return fetch(`${simulator.url}/model/${encodeURIComponent(MODEL)}/converse-stream`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ABSKsimulatorkey0001' }, body: JSON.stringify(body),
  })
}

const HELLO = { messages: [{ role: 'user', content: [{ text: 'Hello' }] }] }

describe('Bedrock ConverseStream dialect', () => {
  it('the CRC is CRC-32/IEEE (check value of "123456789")', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926)
  })

  it('answers in event-stream frames: messageStart, deltas, contentBlockStop, messageStop, metadata', async () => {
    const response = await converseStream(HELLO)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/vnd.amazon.eventstream')
    const decoded = frames(Buffer.from(await response.arrayBuffer()))
    expect(decoded.every((frame) => frame.headers[':message-type'] === 'event' && frame.headers[':content-type'] === 'application/json')).toBe(true)
    const types = decoded.map((frame) => frame.headers[':event-type'])
    expect(types[0]).toBe('messageStart')
    expect(types.slice(-3)).toEqual(['contentBlockStop', 'messageStop', 'metadata'])
    const text = decoded.filter((frame) => frame.headers[':event-type'] === 'contentBlockDelta').map((frame) => frame.payload.delta.text).join('')
    expect(text).toBe(`Hello from the simulator (bedrock/${MODEL}).`)
    expect(decoded.at(-2)!.payload.stopReason).toBe('end_turn')
    expect(decoded.at(-1)!.payload.usage.outputTokens).toBeGreaterThan(0)
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'bedrock', stream: true, model: MODEL, status: 200 })
  })

  it('stream_error sends part of the answer, then an exception frame', async () => {
    simulator.setRules([{ provider: 'bedrock', fault: 'stream_error', completion_tokens: 30 }])
    const decoded = frames(Buffer.from(await (await converseStream(HELLO)).arrayBuffer()))
    const last = decoded.at(-1)!
    expect(last.headers).toMatchObject({ ':message-type': 'exception', ':exception-type': 'modelStreamErrorException' })
    expect(typeof last.payload.message).toBe('string')
    expect(decoded.slice(0, -1).every((frame) => frame.headers[':message-type'] === 'event')).toBe(true)
    expect(decoded.some((frame) => frame.headers[':event-type'] === 'messageStop')).toBe(false)
  })
})
