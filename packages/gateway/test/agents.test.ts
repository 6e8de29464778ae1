/**
 * The agent surfaces end to end (issue 17): a gateway process in front of a simulator
 * process, driven by the official `@anthropic-ai/sdk` and `openai` clients, against each
 * upstream dialect, with a revoked key and a failing provider in play.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess
let anthropic: Anthropic
let openai: OpenAI

const network = (url: string) => ({ base_url: url, retry_backoff_initial: 10, retry_backoff_max: 50 })
const REVOKED = ['sk-ant-revoked', 'sk-oa-revoked', 'azkey-revoked', 'sk-groq-revoked']

beforeAll(async () => {
  simulator = await startSimulator()
  const url = simulator.url
  gateway = await startGateway({
    providers: {
      anthropic: {
        keys: [
          { name: 'ant-revoked', value: 'sk-ant-revoked', models: ['claude-sonnet-4-5', 'claude-haiku-4-5'], weight: 1 },
          { name: 'ant-good', value: 'sk-ant-good', models: ['claude-sonnet-4-5', 'claude-haiku-4-5'], weight: 1 },
        ],
        network_config: network(url),
      },
      openai: {
        keys: [
          { name: 'oa-revoked', value: 'sk-oa-revoked', models: ['gpt-4o-mini', 'text-embedding-3-small'], weight: 1 },
          { name: 'oa-good', value: 'sk-oa-good', models: ['gpt-4o-mini', 'text-embedding-3-small'], weight: 1 },
        ],
        network_config: network(url),
      },
      azure: {
        keys: [
          { name: 'az-revoked', value: 'azkey-revoked', models: ['gpt-4o', 'text-embedding-3-large'], weight: 1, azure_key_config: { deployments: { 'gpt-4o': 'prod-gpt4o', 'text-embedding-3-large': 'prod-embed' }, api_version: '2024-10-21' } },
          { name: 'az-good', value: 'azkey-good', models: ['gpt-4o', 'text-embedding-3-large'], weight: 1, azure_key_config: { deployments: { 'gpt-4o': 'prod-gpt4o', 'text-embedding-3-large': 'prod-embed' }, api_version: '2024-10-21' } },
        ],
        network_config: network(url),
      },
      groq: {
        keys: [
          { name: 'groq-revoked', value: 'sk-groq-revoked', models: ['llama-3.3-70b'], weight: 1 },
          { name: 'groq-good', value: 'sk-groq-good', models: ['llama-3.3-70b'], weight: 1 },
        ],
        network_config: network(url),
        custom_provider_config: { base_provider_type: 'openai' },
      },
    },
  })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'caller-key-not-forwarded', maxRetries: 0 })
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'caller-key-not-forwarded', maxRetries: 0 })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(async () => {
  await simulator.setRules(REVOKED.map((key) => ({ key, fault: 'invalid_api_key' })))
  await simulator.resetRequests()
  const cleared = await fetch(`${gateway.url}/api/adaptive-routing/conditions/clear`, { method: 'POST' })
  expect(cleared.status).toBe(200)
})

interface ExtraFields { provider: string; model: string; key_name: string | null; attempts: { key_name: string; failure_class: string | null; status: number }[] }
const extraFieldsOf = (value: unknown): ExtraFields => (value as { extra_fields: ExtraFields }).extra_fields

/** Sends `count` requests; every one must be served by a good key, and a revoked key is asked at most once (then held). */
async function expectHeldKeySkipped(provider: string, revokedSuffix: string, send: () => Promise<ExtraFields>, count = 6): Promise<void> {
  for (let index = 0; index < count; index++) {
    const extra = await send()
    expect(extra.provider).toBe(provider)
    expect(extra.key_name).toMatch(/good$/)
  }
  const requests = await simulator.requests()
  expect(requests.filter((request) => request.key_suffix === revokedSuffix).length).toBeLessThanOrEqual(1)
  const conditions = (await (await fetch(`${gateway.url}/api/adaptive-routing/conditions`)).json()) as { conditions?: { key_name: string }[] } | { key_name: string }[]
  const list = Array.isArray(conditions) ? conditions : (conditions.conditions ?? [])
  if (requests.some((request) => request.key_suffix === revokedSuffix)) expect(list.map((hold) => hold.key_name)).toContain(`${provider === 'groq' ? 'groq' : provider === 'anthropic' ? 'ant' : provider === 'openai' ? 'oa' : 'az'}-revoked`)
}

describe('POST /v1/messages with @anthropic-ai/sdk', () => {
  it('messages.create is served natively by Anthropic, skipping the held key', async () => {
    await expectHeldKeySkipped('anthropic', 'oked', async () => {
      const message = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] })
      expect(message.type).toBe('message')
      expect(message.content[0]?.type).toBe('text')
      expect(message.stop_reason).toBe('end_turn')
      expect(message.usage.output_tokens).toBeGreaterThan(0)
      return extraFieldsOf(message)
    })
  })

  it('messages.create is translated for OpenAI, Azure and OpenAI-compatible upstreams', async () => {
    for (const [model, provider] of [['openai/gpt-4o-mini', 'openai'], ['azure/gpt-4o', 'azure'], ['groq/llama-3.3-70b', 'groq']] as const) {
      const response = await anthropic.messages.create({ model, max_tokens: 64, system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }] }).withResponse()
      const message = response.data
      expect(message.type).toBe('message')
      expect(message.role).toBe('assistant')
      expect(message.model).toBe(model.split('/')[1])
      expect(message.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Hello from the simulator') })
      expect(message.usage.input_tokens).toBeGreaterThan(0)
      expect(extraFieldsOf(message).provider).toBe(provider)
      expect(response.response.headers.get('x-bf-provider')).toBe(provider)
      expect(response.response.headers.get('x-bf-key-name')).toMatch(/good$/)
      expect(response.response.headers.get('x-request-id')).toBeTruthy()
    }
  })

  it('messages.stream with a tool call: native and translated, the same events reach the SDK', async () => {
    for (const model of ['anthropic/claude-sonnet-4-5', 'openai/gpt-4o-mini']) {
      const stream = anthropic.messages.stream({
        model, max_tokens: 256, messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
        tool_choice: { type: 'tool', name: 'get_weather' },
      })
      const types: string[] = []
      stream.on('streamEvent', (event) => types.push(event.type))
      const message = await stream.finalMessage()
      expect(message.stop_reason).toBe('tool_use')
      const tool = message.content.find((block) => block.type === 'tool_use')
      expect(tool).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'simulated' } })
      expect(types[0]).toBe('message_start')
      expect(types).toContain('content_block_start')
      expect(types).toContain('content_block_delta')
      expect(types.slice(-2)).toEqual(['message_delta', 'message_stop'])
    }
  })

  it('a failing provider: the fallback serves, translated', async () => {
    await simulator.setRules([{ provider: 'anthropic', fault: 'server_error' }])
    const message = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }], fallbacks: ['openai/gpt-4o-mini'] } as Anthropic.MessageCreateParamsNonStreaming)
    const extra = extraFieldsOf(message)
    expect(extra.provider).toBe('openai')
    expect(extra.attempts.some((attempt) => attempt.failure_class === 'transient')).toBe(true)
    expect(message.content[0]).toMatchObject({ type: 'text' })
  })

  it('errors come back in Anthropic shape with the right status', async () => {
    const missing = await fetch(`${gateway.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] }) })
    expect(missing.status).toBe(400)
    const body = (await missing.json()) as { type: string; error: { type: string; message: string } }
    expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') } })
    expect(missing.headers.get('x-request-id')).toBeTruthy()

    await simulator.setRules([{ provider: 'anthropic', fault: 'invalid_api_key' }])
    const error = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(Anthropic.APIError)
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(502)
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'api_error' } })

    const unknown = await anthropic.messages.create({ model: 'no-such-model', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught)
    expect((unknown as InstanceType<typeof Anthropic.APIError>).status).toBe(404)
    expect((unknown as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } })
  })

  it('a session stays on its provider and key', async () => {
    const headers = { 'x-claude-code-session-id': 'session-abc' }
    const first = await anthropic.messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }, { headers })
    const keyName = extraFieldsOf(first).key_name
    for (let index = 0; index < 5; index++) {
      const next = await anthropic.messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }, { headers })
      expect(extraFieldsOf(next).key_name).toBe(keyName)
    }
  })
})

describe('GET /v1/models', () => {
  it('openai models.list lists the configured models with their availability', async () => {
    const page = await openai.models.list()
    const ids = page.data.map((model) => model.id)
    expect(ids).toEqual(expect.arrayContaining(['claude-sonnet-4-5', 'gpt-4o-mini', 'gpt-4o', 'llama-3.3-70b', 'text-embedding-3-small']))
    const entry = page.data.find((model) => model.id === 'gpt-4o-mini') as unknown as { object: string; available: boolean; providers: string[] }
    expect(entry).toMatchObject({ object: 'model', available: true, providers: ['openai'] })
  })

  it('answers in Anthropic shape when anthropic-version is sent, and marks a model whose every key is held', async () => {
    await simulator.setRules([{ provider: 'azure', fault: 'invalid_api_key' }])
    // Both azure keys refused: both held.
    await openai.chat.completions.create({ model: 'azure/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch(() => undefined)
    const models = await anthropic.models.list()
    const byId = new Map(models.data.map((model) => [model.id, model as unknown as { type: string; available: boolean }]))
    expect(byId.get('claude-sonnet-4-5')).toMatchObject({ type: 'model', available: true })
    expect(byId.get('gpt-4o')).toMatchObject({ type: 'model', available: false })
  })
})

describe('POST /v1/messages/count_tokens', () => {
  it('countTokens: Anthropic counts natively; a model without an Anthropic provider gets a local estimate', async () => {
    const native = await anthropic.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hello there, how many tokens is this?' }] })
    expect(native.input_tokens).toBeGreaterThan(0)
    expect(extraFieldsOf(native).provider).toBe('anthropic')
    const estimated = await anthropic.messages.countTokens({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there, how many tokens is this?' }] })
    expect(estimated.input_tokens).toBe(native.input_tokens)
    expect((estimated as unknown as { extra_fields: { estimated: boolean } }).extra_fields.estimated).toBe(true)
  })
})

describe('POST /v1/responses with openai', () => {
  it('responses.create is served natively by OpenAI and Azure, skipping the held key', async () => {
    for (const [model, provider, suffix] of [['openai/gpt-4o-mini', 'openai', 'oked'], ['azure/gpt-4o', 'azure', 'oked']] as const) {
      await simulator.resetRequests()
      await expectHeldKeySkipped(provider, suffix, async () => {
        const response = await openai.responses.create({ model, input: 'Hello', instructions: 'Be brief.' })
        expect(response.object).toBe('response')
        expect(response.status).toBe('completed')
        expect(response.output_text).toContain('Hello from the simulator')
        expect(response.usage?.output_tokens).toBeGreaterThan(0)
        return extraFieldsOf(response)
      })
      const upstream = (await simulator.requests()).filter((request) => request.provider === provider)
      expect(upstream.length).toBeGreaterThan(0)
    }
  })

  it('responses.create is translated for Anthropic and chat-only OpenAI-compatible upstreams', async () => {
    for (const [model, provider] of [['anthropic/claude-sonnet-4-5', 'anthropic'], ['groq/llama-3.3-70b', 'groq']] as const) {
      const response = await openai.responses.create({ model, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }], max_output_tokens: 64 })
      expect(response.object).toBe('response')
      expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant' })
      expect(response.output_text).toContain('Hello from the simulator')
      expect(response.usage?.input_tokens).toBeGreaterThan(0)
      expect(extraFieldsOf(response).provider).toBe(provider)
    }
  })

  it('responses.stream with a function call, native and translated', async () => {
    for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'groq/llama-3.3-70b']) {
      const stream = openai.responses.stream({
        model,
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
          { role: 'user', content: 'And in Rome?' },
        ],
        tools: [{ type: 'function', name: 'get_weather', description: 'Weather for a city', strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
        tool_choice: { type: 'function', name: 'get_weather' },
      })
      const types: string[] = []
      stream.on('event', (event) => types.push(event.type))
      const response = await stream.finalResponse()
      const call = response.output.find((item) => item.type === 'function_call')
      expect(call, model).toMatchObject({ type: 'function_call', name: 'get_weather' })
      expect(JSON.parse((call as { arguments: string }).arguments)).toEqual({ city: 'simulated' })
      expect(types[0]).toBe('response.created')
      expect(types).toContain('response.function_call_arguments.delta')
      expect(types[types.length - 1]).toBe('response.completed')
    }
  })

  it('a failing provider: the fallback serves; errors are OpenAI-shaped', async () => {
    await simulator.setRules([{ provider: 'openai', fault: 'server_error' }])
    const response = await openai.responses.create({ model: 'openai/gpt-4o-mini', input: 'Hello', fallbacks: ['anthropic/claude-haiku-4-5'] } as OpenAI.Responses.ResponseCreateParamsNonStreaming)
    expect(extraFieldsOf(response).provider).toBe('anthropic')
    expect(extraFieldsOf(response).attempts[0]).toMatchObject({ provider: 'openai', failure_class: 'transient' })

    const refused = await openai.responses.create({ model: 'anthropic/claude-haiku-4-5', input: 'Hello', previous_response_id: 'resp_123' }).catch((caught: unknown) => caught)
    expect(refused).toBeInstanceOf(OpenAI.APIError)
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(400)
    expect((refused as InstanceType<typeof OpenAI.APIError>).message).toContain('previous_response_id')

    const bad = await openai.responses.create({ model: 'openai/gpt-4o-mini', input: 42 as unknown as string }).catch((caught: unknown) => caught)
    expect((bad as InstanceType<typeof OpenAI.APIError>).status).toBe(400)
    expect((bad as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ type: 'invalid_request_error', param: 'input' })
  })

  it('a session stays on its provider and key (Codex session_id)', async () => {
    const headers = { session_id: 'codex-session-1' }
    const first = await openai.responses.create({ model: 'gpt-4o-mini', input: 'hi' }, { headers })
    for (let index = 0; index < 5; index++) {
      const next = await openai.responses.create({ model: 'gpt-4o-mini', input: 'hi' }, { headers })
      expect(extraFieldsOf(next).key_name).toBe(extraFieldsOf(first).key_name)
    }
  })
})

describe('POST /v1/embeddings with openai', () => {
  it('embeddings.create at OpenAI and Azure, skipping the held key', async () => {
    for (const [model, provider] of [['openai/text-embedding-3-small', 'openai'], ['azure/text-embedding-3-large', 'azure']] as const) {
      await simulator.resetRequests()
      await expectHeldKeySkipped(provider, 'oked', async () => {
        const response = await openai.embeddings.create({ model, input: ['alpha', 'beta'] }).withResponse()
        expect(response.data.data).toHaveLength(2)
        expect(response.data.data[0]!.embedding.length).toBeGreaterThan(0)
        expect(response.response.headers.get('x-bf-provider')).toBe(provider)
        return extraFieldsOf(response.data)
      }, 4)
    }
  })

  it('a model only Anthropic serves is a clear 404', async () => {
    const error = await openai.embeddings.create({ model: 'claude-sonnet-4-5', input: 'x' }).catch((caught: unknown) => caught)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(404)
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain('embeddings')
  })
})
