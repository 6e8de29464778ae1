import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, type FaultPreset, type Simulator } from '../index.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())
beforeEach(() => simulator.clearRules())

const MODEL = 'anthropic.claude-sonnet-4-5-20250929-v1:0'

function converse(body: unknown, headers: Record<string, string> = { authorization: 'Bearer ABSKsimulatorkey0001' }): Promise<Response> {
  return fetch(`${simulator.url}/model/${encodeURIComponent(MODEL)}/converse`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  })
}

const HELLO = { messages: [{ role: 'user', content: [{ text: 'Hello' }] }] }

/** Status and x-amzn-errortype per preset, from Bedrock's documented errors (see providers' test/fixtures/errors/bedrock.ts). */
const presets: Array<[Exclude<FaultPreset, 'timeout' | 'reset' | 'stream_cut' | 'stream_error'>, number, string | null]> = [
  ['invalid_api_key', 403, 'UnrecognizedClientException'],
  ['insufficient_quota', 400, 'ServiceQuotaExceededException'],
  ['rate_limit', 429, 'ThrottlingException'],
  ['model_not_found', 400, 'ValidationException'],
  ['model_access', 403, 'AccessDeniedException'],
  ['model_deprecated', 404, 'ResourceNotFoundException'],
  ['region_blocked', 400, 'ValidationException'],
  ['server_error', 500, 'InternalServerException'],
  ['bad_gateway', 502, null],
  ['unavailable', 503, 'ServiceUnavailableException'],
  ['overloaded', 429, 'ModelNotReadyException'],
  ['context_length_exceeded', 400, 'ValidationException'],
  ['bad_request', 400, 'ValidationException'],
]

describe('Bedrock Converse dialect', () => {
  it('answers a Converse body with output.message, stopReason, usage and metrics', async () => {
    const response = await converse({ ...HELLO, system: [{ text: 'Be brief.' }], inferenceConfig: { maxTokens: 100 } })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-amzn-requestid')).toMatch(/^req_/)
    const body = await response.json() as Record<string, any>
    expect(body.output.message).toEqual({ role: 'assistant', content: [{ text: `Hello from the simulator (bedrock/${MODEL}).` }] })
    expect(body.stopReason).toBe('end_turn')
    expect(body.usage.totalTokens).toBe(body.usage.inputTokens + body.usage.outputTokens)
    expect(typeof body.metrics.latencyMs).toBe('number')
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'bedrock', model: MODEL, key: 'ABSKsimulatorkey0001' })
  })

  it('stops at maxTokens with stopReason max_tokens', async () => {
    simulator.setRules([{ provider: 'bedrock', completion_tokens: 50 }])
    const body = await (await converse({ ...HELLO, inferenceConfig: { maxTokens: 5 } })).json() as Record<string, any>
    expect(body.stopReason).toBe('max_tokens')
    expect(body.usage.outputTokens).toBe(5)
  })

  it('refuses a body without messages, or starting with the assistant, as a ValidationException', async () => {
    for (const body of [{}, { messages: [{ role: 'assistant', content: [{ text: 'x' }] }] }]) {
      const response = await converse(body)
      expect(response.status).toBe(400)
      expect(response.headers.get('x-amzn-errortype')).toMatch(/^ValidationException:/)
      expect(typeof ((await response.json()) as { message: unknown }).message).toBe('string')
    }
  })

  it.each(presets)('%s answers %i with the real x-amzn-errortype', async (preset, status, type) => {
    simulator.setRules([{ provider: 'bedrock', fault: preset }])
    const response = await converse(HELLO)
    expect(response.status).toBe(status)
    const header = response.headers.get('x-amzn-errortype')
    if (type === null) expect(header).toBeNull()
    else expect(header).toBe(`${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`)
    expect(typeof ((await response.json()) as { message: unknown }).message).toBe('string')
  })
})
