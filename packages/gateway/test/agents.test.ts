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
          { name: 'groq-revoked', value: 'sk-groq-revoked', models: ['llama-3.3-70b', 'nomic-embed-text'], weight: 1 },
          { name: 'groq-good', value: 'sk-groq-good', models: ['llama-3.3-70b', 'nomic-embed-text'], weight: 1 },
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
    for (const model of ['anthropic/claude-sonnet-4-5', 'openai/gpt-4o-mini', 'azure/gpt-4o', 'groq/llama-3.3-70b']) {
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
    for (const [model, provider, suffix, path] of [['openai/gpt-4o-mini', 'openai', 'oked', '/v1/responses'], ['azure/gpt-4o', 'azure', 'oked', '/openai/v1/responses']] as const) {
      await simulator.resetRequests()
      await expectHeldKeySkipped(provider, suffix, async () => {
        const response = await openai.responses.create({ model, input: 'Hello', instructions: 'Be brief.' })
        expect(response.object).toBe('response')
        expect(response.status).toBe('completed')
        expect(response.output_text).toContain('Hello from the simulator')
        expect(response.usage?.output_tokens).toBeGreaterThan(0)
        return extraFieldsOf(response)
      })
      const upstream = (await upstreamRequests()).filter((request) => request.provider === provider)
      expect(upstream.length).toBeGreaterThan(0)
      for (const request of upstream) expect(request.path).toBe(path)
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
      const upstream = (await upstreamRequests()).filter((request) => request.provider === (provider === 'groq' ? 'openai' : provider) && request.status === 200).at(-1)
      expect(upstream?.path).toBe(provider === 'groq' ? '/v1/chat/completions' : '/v1/messages')
    }
  })

  it('responses.stream with a function call, native and translated', async () => {
    for (const model of ['openai/gpt-4o-mini', 'azure/gpt-4o', 'anthropic/claude-sonnet-4-5', 'groq/llama-3.3-70b']) {
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
  it('embeddings.create at OpenAI, Azure and an OpenAI-compatible provider, skipping the held key', async () => {
    for (const [model, provider] of [['openai/text-embedding-3-small', 'openai'], ['azure/text-embedding-3-large', 'azure'], ['groq/nomic-embed-text', 'groq']] as const) {
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

interface RecordedUpstream { provider: string; key_suffix: string; status: number; path?: string; anthropic_version?: string; anthropic_beta?: string; stream: boolean }
const upstreamRequests = async () => (await simulator.requests()) as unknown as RecordedUpstream[]

/** Reads an SSE body into its events (name and parsed data). */
async function readEvents(response: Response): Promise<{ event: string; data: Record<string, any> }[]> {
  const text = await response.text()
  const events: { event: string; data: Record<string, any> }[] = []
  for (const block of text.split('\n\n')) {
    const event = /^event: (.+)$/m.exec(block)?.[1]
    const data = /^data: (.+)$/m.exec(block)?.[1]
    if (event !== undefined && data !== undefined) events.push({ event, data: JSON.parse(data) })
  }
  return events
}

describe('requests shaped as the coding agents send them', () => {
  // Claude Code's LLM-gateway protocol (code.claude.com/docs/en/llm-gateway): /v1/messages with
  // anthropic-version and anthropic-beta to forward, X-Claude-Code-Session-Id on every request,
  // ANTHROPIC_AUTH_TOKEN as a bearer token; the body is what its CLI sends in a turn.
  const claudeCodeHeaders = {
    'content-type': 'application/json',
    accept: 'application/json',
    authorization: 'Bearer gateway-token-of-the-caller',
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14',
    'anthropic-dangerous-direct-browser-access': 'true',
    'x-app': 'cli',
    'user-agent': 'claude-cli/2.0.14 (external, cli)',
    'x-claude-code-session-id': '5f0c8a52-8f0e-4f7e-9d3c-6b1f6c2f1a01',
    'x-stainless-lang': 'js',
    'x-stainless-retry-count': '0',
    'x-stainless-timeout': '600',
  }
  const claudeCodeBody = (model: string) => ({
    model,
    max_tokens: 32000,
    temperature: 1,
    stream: true,
    thinking: { type: 'enabled', budget_tokens: 31999 },
    metadata: { user_id: 'user_2f9c_account__session_5f0c8a52-8f0e-4f7e-9d3c-6b1f6c2f1a01' },
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.', cache_control: { type: 'ephemeral' } },
    ],
    messages: [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>As you answer, use the tools available.</system-reminder>' }, { type: 'text', text: 'List the files here.', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'I should run ls.', signature: 'EqQBCkYIBxgCKkA' }, { type: 'tool_use', id: 'toolu_01A', name: 'Bash', input: { command: 'ls', description: 'List files' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: 'README.md\npackage.json' }] },
    ],
    tools: [
      {
        name: 'Bash',
        description: 'Executes a given bash command in a persistent shell session.',
        input_schema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', additionalProperties: false, properties: { command: { type: 'string' }, description: { type: 'string' }, timeout: { type: 'number' } }, required: ['command'] },
      },
      {
        name: 'Read',
        description: 'Reads a file from the local filesystem.',
        input_schema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', additionalProperties: false, properties: { file_path: { type: 'string' } }, required: ['file_path'] },
      },
    ],
  })

  it('Claude Code: served natively with anthropic-version and anthropic-beta forwarded unchanged, and translated to OpenAI', async () => {
    for (const model of ['claude-sonnet-4-5', 'openai/gpt-4o-mini']) {
      await simulator.resetRequests()
      const response = await fetch(`${gateway.url}/v1/messages`, { method: 'POST', headers: claudeCodeHeaders, body: JSON.stringify(claudeCodeBody(model)) })
      expect(response.status, model).toBe(200)
      expect(response.headers.get('content-type')).toContain('text/event-stream')
      expect(response.headers.get('x-request-id')).toBeTruthy()
      const events = await readEvents(response)
      expect(events[0]!.event).toBe('message_start')
      expect(events.map((event) => event.event)).toContain('content_block_delta')
      expect(events.at(-1)!.event).toBe('message_stop')
      expect(events.at(-1)!.data.extra_fields.provider).toBe(model.startsWith('openai/') ? 'openai' : 'anthropic')
      const upstream = (await upstreamRequests()).filter((request) => request.status === 200)
      expect(upstream.length).toBe(1)
      if (model.startsWith('openai/')) {
        expect(upstream[0]).toMatchObject({ provider: 'openai', path: '/v1/chat/completions' })
      } else {
        expect(upstream[0]).toMatchObject({ provider: 'anthropic', path: '/v1/messages', anthropic_version: '2023-06-01', anthropic_beta: claudeCodeHeaders['anthropic-beta'] })
      }
      // The caller's own credentials are the gateway's business: upstreams get the configured keys only.
      for (const request of await upstreamRequests()) expect(['good', 'oked']).toContain(request.key_suffix)
    }
    // The same session, next turn: kept on its provider and key.
    const again = await fetch(`${gateway.url}/v1/messages`, { method: 'POST', headers: claudeCodeHeaders, body: JSON.stringify({ ...claudeCodeBody('claude-sonnet-4-5'), stream: false }) })
    expect(again.status).toBe(200)
    expect(again.headers.get('x-bf-provider')).toBe('anthropic')
    expect(again.headers.get('x-bf-key-name')).toBe('ant-good')
  })

  it('Claude Code: count_tokens with its headers', async () => {
    const { stream: _stream, max_tokens: _max, temperature: _temperature, metadata: _metadata, ...count } = claudeCodeBody('claude-sonnet-4-5')
    const response = await fetch(`${gateway.url}/v1/messages/count_tokens`, { method: 'POST', headers: claudeCodeHeaders, body: JSON.stringify(count) })
    expect(response.status).toBe(200)
    expect(((await response.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0)
    const upstream = (await upstreamRequests()).at(-1)!
    expect(upstream).toMatchObject({ path: '/v1/messages/count_tokens', anthropic_beta: claudeCodeHeaders['anthropic-beta'] })
  })

  // Codex CLI (openai/codex, codex-rs/codex-api): POST {base}/responses, streamed, store false,
  // the conversation id as `session_id`, originator and OpenAI-Beta headers, a bearer token.
  const codexHeaders = {
    'content-type': 'application/json',
    accept: 'text/event-stream',
    authorization: 'Bearer gateway-token-of-the-caller',
    'openai-beta': 'responses=experimental',
    originator: 'codex_cli_rs',
    version: '0.46.0',
    'user-agent': 'codex_cli_rs/0.46.0 (Debian 12; x86_64) xterm-256color',
    session_id: '0199a3c4-7d2e-7c11-9a7e-2b6f1c9d4e55',
    conversation_id: '0199a3c4-7d2e-7c11-9a7e-2b6f1c9d4e55',
  }
  const codexBody = (model: string) => ({
    model,
    instructions: 'You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user\'s computer.',
    input: [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/work/project</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Run the tests.' }] },
      { type: 'reasoning', id: 'rs_1', summary: [], content: null, encrypted_content: 'gAAAAABo-encrypted' },
      { type: 'function_call', name: 'shell', arguments: '{"command":["npm","test"]}', call_id: 'call_a1' },
      { type: 'function_call_output', call_id: 'call_a1', output: '{"output":"3 passed","metadata":{"exit_code":0,"duration_seconds":1.2}}' },
    ],
    tools: [
      { type: 'function', name: 'shell', description: 'Runs a shell command and returns its output.', strict: false, parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } }, workdir: { type: 'string' }, timeout_ms: { type: 'number' } }, required: ['command'], additionalProperties: false } },
      { type: 'function', name: 'update_plan', description: 'Updates the task plan.', strict: false, parameters: { type: 'object', properties: { plan: { type: 'array', items: { type: 'object' } } }, required: ['plan'], additionalProperties: false } },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: false,
    reasoning: { effort: 'medium', summary: 'auto' },
    store: false,
    stream: true,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: '0199a3c4-7d2e-7c11-9a7e-2b6f1c9d4e55',
  })

  it('Codex CLI: served natively by OpenAI and translated for Anthropic, with its session kept', async () => {
    for (const [model, provider, path] of [['openai/gpt-4o-mini', 'openai', '/v1/responses'], ['anthropic/claude-sonnet-4-5', 'anthropic', '/v1/messages']] as const) {
      await simulator.resetRequests()
      const response = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: codexHeaders, body: JSON.stringify(codexBody(model)) })
      expect(response.status, model).toBe(200)
      const events = await readEvents(response)
      expect(events[0]!.event).toBe('response.created')
      expect(events.map((event) => event.event)).toContain('response.output_text.delta')
      const last = events.at(-1)!
      expect(last.event).toBe('response.completed')
      expect(last.data.response.status).toBe('completed')
      expect(last.data.response.usage.output_tokens).toBeGreaterThan(0)
      expect(last.data.extra_fields.provider).toBe(provider)
      const upstream = (await upstreamRequests()).filter((request) => request.status === 200)
      expect(upstream[0]).toMatchObject({ provider, path })
      for (const request of await upstreamRequests()) expect(['good', 'oked']).toContain(request.key_suffix)
    }
    const keys = new Set<string | null>()
    for (let index = 0; index < 4; index++) {
      const response = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: codexHeaders, body: JSON.stringify({ ...codexBody('gpt-4o-mini'), stream: false }) })
      expect(response.status).toBe(200)
      keys.add(response.headers.get('x-bf-key-name'))
    }
    expect(keys.size).toBe(1)
  })

  it('a stream cut mid-way ends with the format\'s own error event', async () => {
    await simulator.setRules([{ provider: 'anthropic', fault: 'stream_cut' }])
    const stream = anthropic.messages.stream({ model: 'anthropic/claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] })
    await expect(stream.finalMessage()).rejects.toThrow(/stream broke|terminated|error/i)
    await simulator.setRules([{ provider: 'openai', fault: 'stream_cut' }])
    const response = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', input: 'Hello', stream: true }) })
    const events = await readEvents(response)
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { type: 'error', message: expect.stringContaining('stream broke') } })
  })
})

describe('wrong methods', () => {
  it('answer 405 in each format\'s shape', async () => {
    const messages = await fetch(`${gateway.url}/v1/messages`)
    expect(messages.status).toBe(405)
    expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'method_not_allowed' } })
    const responses = await fetch(`${gateway.url}/v1/responses`, { method: 'PUT' })
    expect(responses.status).toBe(405)
    expect(await responses.json()).toMatchObject({ error: { code: 'method_not_allowed' } })
  })
})
