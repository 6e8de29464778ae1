import { createSimulator, simulatorServiceAccount, type Simulator } from '@switchboard/simulator'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { Cancellation } from '../http/cancellation.ts'
import type { AttemptResult, ChatRequestBody, ProviderAdapter, ProviderKey } from '../types.ts'
import { createGoogleAdapter } from './adapter.ts'

const EMAIL = 'gateway@simulator-project.iam.gserviceaccount.com'
/** Tokens live two seconds here, so a run of a few seconds crosses several expiries. */
const TOKEN_LIFETIME_S = 2

let simulator: Simulator
let gemini: ProviderAdapter
let vertex: ProviderAdapter
beforeAll(async () => {
  simulator = await createSimulator({ token_lifetime_s: TOKEN_LIFETIME_S })
  const network = { base_url: simulator.url, default_request_timeout_in_seconds: 30, max_retries: 0, retry_backoff_initial: 100, retry_backoff_max: 1000, extra_headers: {} }
  gemini = createGoogleAdapter({ name: 'gemini', type: 'gemini', network })
  vertex = createGoogleAdapter({ name: 'vertex', type: 'vertex', network })
})
afterAll(async () => {
  await gemini.close()
  await vertex.close()
  await simulator.close()
})
beforeEach(() => {
  simulator.clearRules()
  simulator.resetRequests()
})

const geminiKey: ProviderKey = { id: 'g1', name: 'g1', value: 'AIzaSimulatorGeminiKey01', models: ['*'], weight: 1 }

function vertexKey(email = EMAIL): ProviderKey {
  const credentials = JSON.stringify(simulatorServiceAccount(email, 'simulator-project', `${simulator.url}/token`))
  return { id: 'v1', name: 'v1', value: 'service-account', models: ['*'], weight: 1, vertex_key_config: { project_id: 'simulator-project', region: 'us-central1', auth_credentials: credentials } }
}

function send(adapter: ProviderAdapter, key: ProviderKey, model: string, body: Partial<ChatRequestBody> = {}): Promise<AttemptResult> {
  return adapter.send({ body: { model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there.' }], ...body }, model, key, signal: new Cancellation() })
}

function json(result: AttemptResult): Record<string, any> {
  if (!result.ok || result.kind !== 'json' || result.body === undefined) throw new Error(`expected a JSON success, got ${JSON.stringify(result)}`)
  return result.body
}

async function chunksOf(result: AttemptResult): Promise<Array<Record<string, any>>> {
  if (!result.ok || result.kind !== 'stream') throw new Error(`expected a stream, got ${JSON.stringify(result)}`)
  const chunks: Array<Record<string, any>> = []
  for await (const event of result.events) chunks.push(JSON.parse(event))
  return chunks
}

const TOOLS = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]

describe('gemini adapter (Gemini API, API key)', () => {
  it('answers generateContent in chat.completion shape with x-goog-api-key', async () => {
    const body = json(await send(gemini, geminiKey, 'gemini-2.5-flash'))
    expect(body.choices[0].message.content).toBe('Hello from the simulator (gemini/gemini-2.5-flash).')
    expect(body.choices[0].finish_reason).toBe('stop')
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens)
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'gemini', key: geminiKey.value, path: '/v1beta/models/gemini-2.5-flash:generateContent' })
  })

  it('streams SSE as chunks, usage last when asked for', async () => {
    simulator.setRules([{ provider: 'gemini', completion_tokens: 30 }])
    const chunks = await chunksOf(await send(gemini, geminiKey, 'gemini-2.5-flash', { stream: true, stream_options: { include_usage: true } }))
    expect(chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')).toHaveLength(120)
    expect(chunks.filter((chunk) => chunk.choices[0]?.finish_reason === 'stop')).toHaveLength(1)
    expect(chunks.at(-1)!.usage.completion_tokens).toBe(30)
  })

  it('sends tools as functionDeclarations and reads functionCall back as tool_calls', async () => {
    const body = json(await send(gemini, geminiKey, 'gemini-2.5-flash', { tools: TOOLS, tool_choice: 'required' }))
    expect(body.choices[0].finish_reason).toBe('tool_calls')
    expect(body.choices[0].message.tool_calls[0].function).toEqual({ name: 'get_weather', arguments: '{"city":"simulated"}' })
    const streamed = await chunksOf(await send(gemini, geminiKey, 'gemini-2.5-flash', { tools: TOOLS, tool_choice: 'required', stream: true }))
    const call = streamed.flatMap((chunk) => chunk.choices[0]?.delta?.tool_calls ?? [])[0]
    expect(call).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '{"city":"simulated"}' } })
    expect(streamed.at(-1)!.choices[0].finish_reason).toBe('tool_calls')
  })

  it('classifies Gemini faults from status and details', async () => {
    const cases = [
      ['invalid_api_key', { failureClass: 'credential', scope: 'key', status: 400 }],
      ['rate_limit', { failureClass: 'rate_limit', scope: 'model', status: 429, waitHintMs: 20_000 }],
      ['model_access', { failureClass: 'model_access', scope: 'model', status: 403 }],
      ['unavailable', { failureClass: 'transient', status: 503 }],
    ] as const
    for (const [preset, expected] of cases) {
      simulator.setRules([{ provider: 'gemini', fault: preset }])
      const result = await send(gemini, geminiKey, 'gemini-2.5-flash')
      expect(result.ok, preset).toBe(false)
      if (!result.ok) expect(result.failure, preset).toMatchObject(expected)
    }
  })

  it('throws the error object Gemini sends mid-stream', async () => {
    simulator.setRules([{ provider: 'gemini', fault: 'stream_error', completion_tokens: 30 }])
    const result = await send(gemini, geminiKey, 'gemini-2.5-flash', { stream: true })
    await expect(chunksOf(result)).rejects.toMatchObject({ name: 'StreamFailure', failure: { failureClass: 'transient', status: 200, code: 'UNAVAILABLE' } })
  })
})

describe('vertex adapter (Vertex AI, service-account OAuth2)', () => {
  it('fetches a token from the service account\'s token_uri and answers generateContent on the project path', async () => {
    const body = json(await send(vertex, vertexKey(), 'gemini-2.5-pro'))
    expect(body.choices[0].message.content).toBe('Hello from the simulator (vertex/gemini-2.5-pro).')
    expect(simulator.requests().at(-1)).toMatchObject({
      provider: 'vertex', key: EMAIL, model: 'gemini-2.5-pro', status: 200,
      path: '/v1/projects/simulator-project/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent',
    })
  })

  it('serves Claude through rawPredict and streamRawPredict in Anthropic\'s format, tools included', async () => {
    const body = json(await send(vertex, vertexKey(), 'claude-sonnet-4-5@20250929'))
    expect(body.choices[0].message.content).toBe('Hello from the simulator (vertex/claude-sonnet-4-5@20250929).')
    expect(simulator.requests().at(-1)!.path).toBe('/v1/projects/simulator-project/locations/us-central1/publishers/anthropic/models/claude-sonnet-4-5%4020250929:rawPredict')
    const chunks = await chunksOf(await send(vertex, vertexKey(), 'claude-sonnet-4-5@20250929', { stream: true, tools: TOOLS, tool_choice: 'required' }))
    const calls = chunks.flatMap((chunk) => chunk.choices[0]?.delta?.tool_calls ?? [])
    expect(calls[0]).toMatchObject({ index: 0, function: { name: 'get_weather' } })
    expect(JSON.parse(calls.map((call: any) => call.function.arguments).join(''))).toEqual({ city: 'simulated' })
    expect(simulator.requests().at(-1)!.path).toMatch(/:streamRawPredict$/)
  })

  it('a token that expires mid-run is refreshed before expiry: no request fails', async () => {
    const key = vertexKey('refresh-test@simulator-project.iam.gserviceaccount.com')
    const before = simulator.tokensIssued()
    const started = Date.now()
    let requests = 0
    // Bounded by time and count: past three token lifetimes, so several tokens expire during the run.
    while (Date.now() - started < TOKEN_LIFETIME_S * 3 * 1000 + 500 && requests < 2000) {
      const result = await send(vertex, key, 'gemini-2.5-flash', requests % 3 === 0 ? { stream: true } : {})
      if (result.ok && result.kind === 'stream') await chunksOf(result)
      else json(result)
      requests++
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const issued = simulator.tokensIssued() - before
    expect(issued).toBeGreaterThanOrEqual(3)
    const seen = simulator.requests().filter((request) => request.key === 'refresh-test@simulator-project.iam.gserviceaccount.com')
    expect(seen).toHaveLength(requests)
    // Not one request reached Vertex with an expired token (the simulator refuses those with 401).
    expect(seen.every((request) => request.status === 200)).toBe(true)
  })

  it('a 401 is retried once with a fresh token; refused again it holds the key as a credential failure', async () => {
    simulator.setRules([{ provider: 'vertex', fault: 'invalid_api_key' }])
    const before = simulator.tokensIssued()
    const result = await send(vertex, vertexKey('revoked@simulator-project.iam.gserviceaccount.com'), 'gemini-2.5-pro')
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.failure).toMatchObject({ failureClass: 'credential', scope: 'key', status: 401 })
    expect(simulator.requests().filter((request) => request.key === 'revoked@simulator-project.iam.gserviceaccount.com')).toHaveLength(2)
    expect(simulator.tokensIssued() - before).toBeGreaterThanOrEqual(2)
  })

  it('a service account the token endpoint refuses is a credential failure of the key, with no secret in the message', async () => {
    const account = simulatorServiceAccount(EMAIL, 'simulator-project', `${simulator.url}/token`)
    const forged = { ...account, private_key: account.private_key!.replace(/[A-Za-z]{8}(?=\n)/, 'AAAAAAAA') }
    const key: ProviderKey = { ...vertexKey(), vertex_key_config: { project_id: 'simulator-project', region: 'us-central1', auth_credentials: JSON.stringify(forged) } }
    const result = await send(vertex, key, 'gemini-2.5-pro')
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.failure.failureClass).toBe('credential')
    expect(result.failure.scope).toBe('key')
    expect(result.failure.message).not.toContain('PRIVATE KEY')
  })

  it('the lost model of a key is model_access on that model only', async () => {
    simulator.setRules([{ provider: 'vertex', key: EMAIL, model: 'gemini-2.5-pro', fault: 'model_access' }])
    const lost = await send(vertex, vertexKey(), 'gemini-2.5-pro')
    expect(lost.ok).toBe(false)
    if (!lost.ok) expect(lost.failure).toMatchObject({ failureClass: 'model_access', scope: 'model', status: 403 })
    expect(json(await send(vertex, vertexKey(), 'gemini-2.5-flash')).choices[0].finish_reason).toBe('stop')
  })
})

describe('vertex adapter: the Messages surface', () => {
  const surfaceRequest = (model: string, stream: boolean) => ({
    surface: 'messages' as const, model, key: vertexKey(), signal: new Cancellation(), stream, headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' },
    body: { model, max_tokens: 100, stream, messages: [{ role: 'user', content: 'Hi' }], metadata: { user_id: 'u-1' } } as Record<string, unknown>,
  })

  it('sends a Claude model\'s Messages body natively through rawPredict, and streams it through streamRawPredict', async () => {
    const { sendSurface } = await import('../surfaces/index.ts')
    const result = await sendSurface(vertex, surfaceRequest('claude-sonnet-4-5@20250929', false))
    if (!result.ok || result.kind !== 'json') throw new Error(`expected JSON, got ${JSON.stringify(result)}`)
    // The upstream's own message (its id), passed through, not rebuilt from a chat completion.
    const message = JSON.parse(result.bytes!.toString('utf8')) as Record<string, any>
    expect(message.id).toMatch(/^msg_vrtx_/)
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'vertex', status: 200, path: expect.stringMatching(/publishers\/anthropic\/models\/claude-sonnet-4-5%4020250929:rawPredict$/) })
    const streamed = await sendSurface(vertex, surfaceRequest('claude-sonnet-4-5@20250929', true))
    if (!streamed.ok || streamed.kind !== 'stream') throw new Error('expected a stream')
    const types: string[] = []
    for await (const event of streamed.events) types.push((JSON.parse(event) as { type: string }).type)
    expect(types[0]).toBe('message_start')
    expect(types.at(-1)).toBe('message_stop')
  })

  it('translates a Gemini model\'s Messages request through chat', async () => {
    const { sendSurface } = await import('../surfaces/index.ts')
    const result = await sendSurface(vertex, surfaceRequest('gemini-2.5-pro', false))
    if (!result.ok || result.kind !== 'json') throw new Error(`expected JSON, got ${JSON.stringify(result)}`)
    expect(result.body).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello from the simulator (vertex/gemini-2.5-pro).' }] })
    expect(simulator.requests().at(-1)!.path).toMatch(/publishers\/google\/models\/gemini-2.5-pro:generateContent$/)
  })
})
