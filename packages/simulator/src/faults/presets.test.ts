import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, type FaultPreset, type ProviderName, type Simulator } from '../index.ts'
import { call, type CallReply } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())
beforeEach(() => simulator.clearRules())

type AnswerPreset = Exclude<FaultPreset, 'timeout' | 'reset' | 'stream_cut' | 'stream_error' | 'stream_stall' | 'stream_malformed' | 'stream_no_done'>

/** Status per preset and provider, from each provider's documented errors. */
/** The dialects this table covers (Gemini and Vertex have their own tests in google/). */
type Covered = 'openai' | 'azure' | 'anthropic' | 'bedrock'

const statuses: Record<AnswerPreset, Record<Covered, number>> = {
  invalid_api_key: { openai: 401, azure: 401, anthropic: 401, bedrock: 403 },
  insufficient_quota: { openai: 429, azure: 403, anthropic: 400, bedrock: 400 },
  rate_limit: { openai: 429, azure: 429, anthropic: 429, bedrock: 429 },
  model_not_found: { openai: 404, azure: 404, anthropic: 404, bedrock: 400 },
  model_access: { openai: 403, azure: 403, anthropic: 403, bedrock: 403 },
  model_deprecated: { openai: 404, azure: 410, anthropic: 404, bedrock: 404 },
  region_blocked: { openai: 403, azure: 403, anthropic: 403, bedrock: 400 },
  server_error: { openai: 500, azure: 500, anthropic: 500, bedrock: 500 },
  bad_gateway: { openai: 502, azure: 502, anthropic: 502, bedrock: 502 },
  unavailable: { openai: 503, azure: 503, anthropic: 503, bedrock: 503 },
  overloaded: { openai: 503, azure: 503, anthropic: 529, bedrock: 429 },
  context_length_exceeded: { openai: 400, azure: 400, anthropic: 400, bedrock: 400 },
  bad_request: { openai: 400, azure: 400, anthropic: 400, bedrock: 400 },
}

/** OpenAI's `error.code` where the preset has a documented one. */
const openaiCodes: Partial<Record<AnswerPreset, string>> = {
  invalid_api_key: 'invalid_api_key',
  insufficient_quota: 'insufficient_quota',
  rate_limit: 'rate_limit_exceeded',
  model_not_found: 'model_not_found',
  model_access: 'model_not_found',
  model_deprecated: 'model_not_found',
  region_blocked: 'unsupported_country_region_territory',
  context_length_exceeded: 'context_length_exceeded',
}

/** Anthropic's `error.type` per preset. */
const anthropicTypes: Record<AnswerPreset, string> = {
  invalid_api_key: 'authentication_error',
  insufficient_quota: 'invalid_request_error',
  rate_limit: 'rate_limit_error',
  model_not_found: 'not_found_error',
  model_access: 'permission_error',
  model_deprecated: 'not_found_error',
  region_blocked: 'forbidden',
  server_error: 'api_error',
  bad_gateway: 'api_error',
  unavailable: 'api_error',
  overloaded: 'overloaded_error',
  context_length_exceeded: 'invalid_request_error',
  bad_request: 'invalid_request_error',
}

const presets = Object.keys(statuses) as AnswerPreset[]

function expectShape(provider: Covered, preset: AnswerPreset, reply: CallReply): void {
  expect(reply.status).toBe(statuses[preset][provider])
  expect(reply.headers.get('content-type')).toBe('application/json')
  const error = reply.json.error
  expect(typeof error.message).toBe('string')
  if (provider === 'openai') {
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type'])
    const code = openaiCodes[preset]
    if (code !== undefined) expect(error.code).toBe(code)
  }
  if (provider === 'azure') expect(error.code === null || typeof error.code === 'string').toBe(true)
  if (provider === 'anthropic') {
    expect(reply.json.type).toBe('error')
    expect(error.type).toBe(anthropicTypes[preset])
  }
}

describe.each(['openai', 'azure', 'anthropic'] as const)('%s fault presets', (provider) => {
  it.each(presets)('%s answers the real status and body shape', async (preset) => {
    simulator.setRules([{ provider, fault: preset }])
    expectShape(provider, preset, await call(simulator, provider, { model: 'gpt-x' }))
  })

  it('rate_limit carries retry-after from retry_after_s and the provider rate headers', async () => {
    simulator.setRules([{ provider, fault: { preset: 'rate_limit', retry_after_s: 20 } }])
    const reply = await call(simulator, provider)
    expect(reply.headers.get('retry-after')).toBe('20')
    if (provider === 'openai') expect(reply.headers.get('x-ratelimit-reset-requests')).toBe('20s')
    if (provider === 'azure') expect(reply.headers.get('retry-after-ms')).toBe('20000')
    if (provider === 'anthropic') expect(reply.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0')
  })

  it('a preset message replaces the provider wording', async () => {
    simulator.setRules([{ provider, fault: { preset: 'server_error', message: 'scripted words' } }])
    expect((await call(simulator, provider)).json.error.message).toBe('scripted words')
  })
})

describe('preset details', () => {
  it("OpenAI's invalid_api_key masks the key and keeps its last four characters", async () => {
    simulator.setRules([{ fault: 'invalid_api_key' }])
    const reply = await call(simulator, 'openai', { key: 'sk-proj-abcdefghijklmnopwxyz' })
    expect(reply.json.error.message).toMatch(/^Incorrect API key provided: sk-\*+wxyz\./)
    expect(reply.json.error.message).not.toContain('abcdefgh')
  })

  it('model_not_found names the model', async () => {
    simulator.setRules([{ fault: 'model_not_found' }])
    expect((await call(simulator, 'openai', { model: 'gpt-9' })).json.error.message)
      .toBe('The model `gpt-9` does not exist or you do not have access to it.')
    expect((await call(simulator, 'anthropic', { model: 'claude-9' })).json.error.message).toBe('model: claude-9')
    expect((await call(simulator, 'azure', { model: 'gone' })).json.error.code).toBe('DeploymentNotFound')
  })

  it('a raw fault is sent as given', async () => {
    simulator.setRules([{ fault: { status: 418, headers: { 'x-custom': 'yes' }, body: { teapot: true } } }])
    const reply = await call(simulator, 'openai')
    expect(reply.status).toBe(418)
    expect(reply.headers.get('x-custom')).toBe('yes')
    expect(reply.json).toEqual({ teapot: true })
    expect(simulator.requests().at(-1)?.fault).toBe('raw')
  })
})
