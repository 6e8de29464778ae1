import { createSimulator, simulatorSecretKey, type Simulator } from '@switchboard/simulator'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { Cancellation } from '../http/cancellation.ts'
import type { AttemptResult, BedrockKeyConfig, ChatRequestBody, ProviderAdapter, ProviderKey } from '../types.ts'
import { createBedrockAdapter } from './adapter.ts'
import { signedHeaders } from './sign.ts'

const ACCESS_KEY = 'AKIASIMULATOR0001'
const PROFILE_ARN = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0'

let simulator: Simulator
let adapter: ProviderAdapter
beforeAll(async () => {
  simulator = await createSimulator()
  adapter = createBedrockAdapter({
    name: 'bedrock',
    type: 'bedrock',
    network: { base_url: simulator.url, default_request_timeout_in_seconds: 30, max_retries: 0, retry_backoff_initial: 100, retry_backoff_max: 1000, extra_headers: {} },
  })
})
afterAll(async () => {
  await adapter.close()
  await simulator.close()
})
beforeEach(() => {
  simulator.clearRules()
  simulator.resetRequests()
})

function key(config: Partial<BedrockKeyConfig> | undefined, value = 'unused-for-sigv4'): ProviderKey {
  const bedrock_key_config: BedrockKeyConfig | undefined = config === undefined
    ? undefined
    : { region: 'us-east-1', access_key: ACCESS_KEY, secret_key: simulatorSecretKey(ACCESS_KEY), deployments: { 'claude-sonnet-4-5': PROFILE_ARN }, ...config }
  return { id: 'k1', name: 'k1', value, models: ['*'], weight: 1, ...(bedrock_key_config ? { bedrock_key_config } : {}) }
}

function send(providerKey: ProviderKey, body: Partial<ChatRequestBody> = {}, model = 'claude-sonnet-4-5'): Promise<AttemptResult> {
  return adapter.send({
    body: { model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there.' }], ...body },
    model,
    key: providerKey,
    signal: new Cancellation(),
  })
}

function json(result: AttemptResult): Record<string, any> {
  if (!result.ok || result.kind !== 'json' || result.body === undefined) throw new Error(`expected a JSON success, got ${JSON.stringify(result)}`)
  return result.body
}

describe('bedrock adapter against the simulator (Converse)', () => {
  it('signs with SigV4, maps the model to its inference-profile ARN and answers in chat.completion shape', async () => {
    const body = json(await send(key({})))
    expect(body.object).toBe('chat.completion')
    expect(body.model).toBe('claude-sonnet-4-5')
    expect(body.choices[0].message.content).toBe(`Hello from the simulator (bedrock/${PROFILE_ARN}).`)
    expect(body.choices[0].finish_reason).toBe('stop')
    expect(body.usage.prompt_tokens).toBeGreaterThan(0)
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens)
    const recorded = simulator.requests().at(-1)
    expect(recorded).toMatchObject({ provider: 'bedrock', key: ACCESS_KEY, model: PROFILE_ARN, status: 200 })
  })

  it('signs temporary credentials with their session token', async () => {
    const body = json(await send(key({ session_token: 'FwoGZXIvYXdzEXAMPLEtoken' })))
    expect(body.choices[0].message.content).toMatch(/^Hello from the simulator/)
  })

  it('is refused with InvalidSignatureException (credential, key scope) when signed with the wrong secret', async () => {
    const result = await send(key({ secret_key: 'not-the-secret' }))
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.failure).toMatchObject({ failureClass: 'credential', scope: 'key', status: 403, code: 'InvalidSignatureException' })
    expect(result.failure.message).toMatch(/signature we calculated does not match/)
  })

  it('sends a Bedrock API key as a bearer token when the key has no access key pair', async () => {
    const body = json(await send(key(undefined, 'ABSKbedrockapikey1234'), {}, 'amazon.nova-pro-v1:0'))
    expect(body.choices[0].message.content).toBe('Hello from the simulator (bedrock/amazon.nova-pro-v1:0).')
    expect(simulator.requests().at(-1)).toMatchObject({ key: 'ABSKbedrockapikey1234', model: 'amazon.nova-pro-v1:0' })
  })

  it('translates tools to toolConfig and toolUse back to tool_calls', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]
    const body = json(await send(key({}), { tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } }))
    expect(body.choices[0].finish_reason).toBe('tool_calls')
    const call = body.choices[0].message.tool_calls[0]
    expect(call.function.name).toBe('get_weather')
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'simulated' })
    expect(call.id).toMatch(/^tooluse_/)
  })

  it('reads the failure class from x-amzn-errortype for the simulator\'s Bedrock faults', async () => {
    const cases = [
      ['model_access', { failureClass: 'model_access', scope: 'model', status: 403, code: 'AccessDeniedException' }],
      ['rate_limit', { failureClass: 'rate_limit', scope: 'model', status: 429, code: 'ThrottlingException' }],
      ['unavailable', { failureClass: 'transient', scope: 'model', status: 503, code: 'ServiceUnavailableException' }],
      ['invalid_api_key', { failureClass: 'credential', scope: 'key', status: 403, code: 'UnrecognizedClientException' }],
      ['model_deprecated', { failureClass: 'model_gone', scope: 'model', status: 404 }],
    ] as const
    for (const [preset, expected] of cases) {
      simulator.setRules([{ provider: 'bedrock', fault: preset }])
      const result = await send(key({}))
      expect(result.ok, preset).toBe(false)
      if (!result.ok) expect(result.failure, preset).toMatchObject(expected)
    }
  })

})

async function chunksOf(result: AttemptResult): Promise<Array<Record<string, any>>> {
  if (!result.ok || result.kind !== 'stream') throw new Error(`expected a stream, got ${JSON.stringify(result)}`)
  const chunks: Array<Record<string, any>> = []
  for await (const event of result.events) chunks.push(JSON.parse(event))
  return chunks
}

describe('bedrock adapter against the simulator (ConverseStream, AWS event-stream framing)', () => {
  it('streams text deltas from /converse-stream, the finish reason, then usage when asked for', async () => {
    simulator.setRules([{ provider: 'bedrock', completion_tokens: 40 }])
    const chunks = await chunksOf(await send(key({}), { stream: true, stream_options: { include_usage: true } }))
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'bedrock', stream: true, path: `/model/${encodeURIComponent(PROFILE_ARN)}/converse-stream`, status: 200 })
    expect(chunks[0]!.choices[0].delta).toEqual({ role: 'assistant', content: '' })
    const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')
    expect(text.length).toBe(160)
    expect(text).toMatch(/^Hello from the simulator/)
    // Token by token: many content chunks, not one.
    expect(chunks.filter((chunk) => typeof chunk.choices[0]?.delta?.content === 'string' && chunk.choices[0].delta.content !== '').length).toBeGreaterThan(3)
    const finish = chunks.find((chunk) => chunk.choices[0]?.finish_reason !== null && chunk.choices.length > 0)
    expect(finish!.choices[0].finish_reason).toBe('stop')
    const last = chunks.at(-1)!
    expect(last.choices).toEqual([])
    expect(last.usage.completion_tokens).toBe(40)
    expect(last.usage.total_tokens).toBe(last.usage.prompt_tokens + 40)
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1)
  })

  it('leaves the usage chunk out unless stream_options.include_usage asks for it', async () => {
    const chunks = await chunksOf(await send(key({}), { stream: true }))
    expect(chunks.every((chunk) => chunk.choices.length === 1)).toBe(true)
  })

  it('streams a tool call: id and name at contentBlockStart, arguments in pieces, finish_reason tool_calls', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } } }]
    const chunks = await chunksOf(await send(key({}), { stream: true, tools, tool_choice: 'required' }))
    const calls = chunks.flatMap((chunk) => chunk.choices[0]?.delta?.tool_calls ?? [])
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } })
    expect(calls[0].id).toMatch(/^tooluse_/)
    expect(calls.length).toBeGreaterThan(2)
    expect(JSON.parse(calls.map((call: any) => call.function.arguments).join(''))).toEqual({ city: 'simulated', days: 1 })
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('tool_calls')
  })

  it('throws the exception frame Bedrock sends mid-stream, after the chunks that came before it', async () => {
    simulator.setRules([{ provider: 'bedrock', fault: { preset: 'stream_error', message: 'scripted stream failure' }, completion_tokens: 40 }])
    const result = await send(key({}), { stream: true })
    if (!result.ok || result.kind !== 'stream') throw new Error('expected a stream')
    const seen: string[] = []
    const error = await (async () => {
      try {
        for await (const event of result.events) seen.push(event)
      } catch (caught) {
        return caught as { name: string; failure: unknown }
      }
      return undefined
    })()
    expect(seen.length).toBeGreaterThan(1)
    expect(error).toMatchObject({ name: 'StreamFailure', failure: { failureClass: 'transient', status: 200, code: 'modelStreamErrorException', message: 'the stream broke: scripted stream failure' } })
  })

  it('a refused stream is a classified failure read from the error answer, as for Converse', async () => {
    simulator.setRules([{ provider: 'bedrock', fault: 'rate_limit' }])
    const result = await send(key({}), { stream: true })
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.failure).toMatchObject({ failureClass: 'rate_limit', status: 429, code: 'ThrottlingException' })
  })

  it('a stream cut inside a frame is malformed, never passed off as complete', async () => {
    simulator.setRules([{ provider: 'bedrock', fault: 'stream_cut', completion_tokens: 40 }])
    const result = await send(key({}), { stream: true })
    if (!result.ok || result.kind !== 'stream') throw new Error('expected a stream')
    await expect((async () => { for await (const _event of result.events) { /* drain */ } })()).rejects.toThrow()
  })
})

describe('the simulator verifies SigV4 signatures', () => {
  const config = { region: 'eu-west-1', access_key: 'AKIAVERIFY000002', secret_key: simulatorSecretKey('AKIAVERIFY000002') }
  const path = `/model/${encodeURIComponent('anthropic.claude-3-haiku-20240307-v1:0')}/converse`
  const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hi' }] }], inferenceConfig: { maxTokens: 50 } })

  async function post(headers: Record<string, string>, sent = body): Promise<Response> {
    return fetch(simulator.url + path, { method: 'POST', headers, body: sent })
  }

  it('accepts a request signed by @smithy/signature-v4 with its key pair', async () => {
    const headers = await signedHeaders(config, simulator.url, path, { 'content-type': 'application/json' }, body, new Date())
    expect(headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAVERIFY000002\/\d{8}\/eu-west-1\/bedrock\/aws4_request, SignedHeaders=/)
    const response = await post(headers)
    expect(response.status).toBe(200)
    const answer = await response.json() as { output: { message: { content: Array<{ text: string }> } }; stopReason: string }
    expect(answer.output.message.content[0]!.text).toBe('Hello from the simulator (bedrock/anthropic.claude-3-haiku-20240307-v1:0).')
    expect(answer.stopReason).toBe('end_turn')
  })

  it('refuses a body changed after signing, and a signature from twenty minutes ago', async () => {
    const headers = await signedHeaders(config, simulator.url, path, { 'content-type': 'application/json' }, body, new Date())
    const tampered = await post(headers, body.replace('Hi', 'Ho'))
    expect(tampered.status).toBe(403)
    expect(tampered.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException:/)
    const stale = await signedHeaders(config, simulator.url, path, { 'content-type': 'application/json' }, body, new Date(Date.now() - 20 * 60_000))
    const expired = await post(stale)
    expect(expired.status).toBe(403)
    expect(((await expired.json()) as { message: string }).message).toMatch(/^Signature expired/)
  })

  it('refuses a request with no credentials as Bedrock does', async () => {
    const response = await post({ 'content-type': 'application/json' })
    expect(response.status).toBe(403)
    expect(response.headers.get('x-amzn-errortype')).toMatch(/^MissingAuthenticationTokenException:/)
  })
})
