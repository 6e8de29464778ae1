/**
 * Amazon Bedrock end to end (issue 20): config.json's `bedrock_key_config` through the store
 * to a SigV4-signed Converse (and ConverseStream) call on a simulator process, on the chat,
 * Messages and Responses surfaces, tools included; secrets redacted by the admin API, and a
 * bare model moving off Bedrock while it fails.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { simulatorSecretKey } from '@switchboard/simulator'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const ACCESS_KEY = 'AKIAGATEWAYTEST01'
const MODEL_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'

let simulator: SimulatorProcess
let gateway: GatewayProcess
let client: OpenAI

beforeAll(async () => {
  simulator = await startSimulator()
  const network = { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 50 }
  gateway = await startGateway({
    providers: {
      bedrock: {
        keys: [{
          name: 'aws-prod',
          value: 'sigv4',
          models: ['claude-sonnet-4-5'],
          weight: 1,
          bedrock_key_config: {
            access_key: ACCESS_KEY,
            secret_key: simulatorSecretKey(ACCESS_KEY),
            session_token: 'FwoGZXIvYXdzEXAMPLEsessiontoken',
            region: 'us-east-1',
            deployments: { 'claude-sonnet-4-5': MODEL_ID },
          },
        }],
        network_config: network,
      },
      anthropic: {
        keys: [{ name: 'claude-1', value: 'sk-ant-5555', models: ['claude-sonnet-4-5'], weight: 1 }],
        network_config: network,
      },
    },
  })
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused-by-the-gateway', maxRetries: 0 })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

describe('bedrock through the gateway', () => {
  it('serves bedrock/<model> with a SigV4-signed Converse call to the key\'s model id', async () => {
    const completion = await client.chat.completions.create({ model: 'bedrock/claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hello' }] })
    expect(completion.choices[0]!.message.content).toBe(`Hello from the simulator (bedrock/${MODEL_ID}).`)
    expect((completion as unknown as { extra_fields: { provider: string } }).extra_fields.provider).toBe('bedrock')
    const recorded = (await simulator.requests()).filter((request) => request.provider === 'bedrock')
    expect(recorded).toHaveLength(1)
    expect(recorded[0]).toMatchObject({ key_suffix: ACCESS_KEY.slice(-4), model: MODEL_ID, status: 200 })
  })

  it('shows the secret key and session token redacted, and a redacted PUT back keeps them working', async () => {
    const shown = await (await fetch(`${gateway.url}/api/providers/bedrock`)).json() as { keys: Array<Record<string, any>> }
    const config = shown.keys[0]!.bedrock_key_config
    expect(config.access_key).toBe(ACCESS_KEY)
    expect(config.region).toBe('us-east-1')
    expect(config.secret_key).not.toContain('simulator-secret')
    expect(config.session_token).not.toContain('EXAMPLEsession')
    expect(JSON.stringify(shown)).not.toContain(simulatorSecretKey(ACCESS_KEY))
    const { name: _name, type: _type, ...body } = shown as Record<string, unknown>
    const put = await fetch(`${gateway.url}/api/providers/bedrock`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    expect(put.status).toBeLessThan(300)
    const completion = await client.chat.completions.create({ model: 'bedrock/claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hello again' }] })
    expect(completion.choices[0]!.message.content).toMatch(/^Hello from the simulator \(bedrock\//)
  })

  it('moves a bare model off Bedrock while it answers ServiceUnavailableException', async () => {
    await simulator.setRules([{ provider: 'bedrock', fault: 'unavailable' }])
    for (let attempt = 0; attempt < 4; attempt++) {
      const completion = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hi' }] })
      expect((completion as unknown as { extra_fields: { provider: string } }).extra_fields.provider).toBe('anthropic')
    }
    const bedrockStatuses = (await simulator.requests()).filter((request) => request.provider === 'bedrock').map((request) => request.status)
    expect(bedrockStatuses.every((status) => status === 503)).toBe(true)
  })

  it('streams a bare model that Bedrock serves from ConverseStream, piece by piece', async () => {
    await simulator.setRules([{ provider: 'anthropic', fault: 'unavailable' }])
    const stream = await client.chat.completions.create({ model: 'claude-sonnet-4-5', stream: true, messages: [{ role: 'user', content: 'Hi' }] })
    const pieces: string[] = []
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content
      if (typeof content === 'string' && content !== '') pieces.push(content)
    }
    expect(pieces.join('')).toBe(`Hello from the simulator (bedrock/${MODEL_ID}).`)
    expect(pieces.length).toBeGreaterThan(1)
    // The simulator records an exchange when its connection's response closes, which can trail the last bytes the caller read.
    const converseStream = `/model/${encodeURIComponent(MODEL_ID)}/converse-stream`
    await expect.poll(async () => (await simulator.requests()).find((request) => request.provider === 'bedrock' && request.path === converseStream), { timeout: 5_000 }).toMatchObject({ stream: true, status: 200 })
  })

  it('streams a tool call on the Anthropic Messages surface from Bedrock', async () => {
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'unused-by-the-gateway', maxRetries: 0 })
    const stream = anthropic.messages.stream({
      model: 'bedrock/claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'tool', name: 'get_weather' },
    })
    const message = await stream.finalMessage()
    expect(message.stop_reason).toBe('tool_use')
    const toolUse = message.content.find((block) => block.type === 'tool_use')
    expect(toolUse).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'simulated' } })
    expect((await simulator.requests()).at(-1)).toMatchObject({ provider: 'bedrock', stream: true, status: 200 })
  })

  it('streams the Responses surface from Bedrock', async () => {
    const stream = await client.responses.create({ model: 'bedrock/claude-sonnet-4-5', input: 'Hi', stream: true })
    let text = ''
    let completed = false
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta
      if (event.type === 'response.completed') completed = true
    }
    expect(text).toBe(`Hello from the simulator (bedrock/${MODEL_ID}).`)
    expect(completed).toBe(true)
    expect((await simulator.requests()).at(-1)).toMatchObject({ provider: 'bedrock', stream: true, status: 200 })
  })

  it('ends the caller\'s stream with an error when Bedrock sends an exception frame mid-stream', async () => {
    await simulator.setRules([{ provider: 'bedrock', fault: { preset: 'stream_error', message: 'model stream failed (scripted)' }, completion_tokens: 40 }])
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bedrock/claude-sonnet-4-5', stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
    })
    expect(response.status).toBe(200)
    const text = await response.text()
    // The chunks before the exception reached the caller, then the error, then the end.
    expect(text).toContain('"content":" simulator keeps"')
    expect(text).toContain('model stream failed (scripted)')
    expect(text).not.toContain('"finish_reason":"stop"')
  })

  it('serves the Anthropic Messages surface from Bedrock through the chat translation', async () => {
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'bedrock/claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    })
    expect(response.status).toBe(200)
    const message = await response.json() as { type: string; content: Array<{ type: string; text: string }> }
    expect(message.type).toBe('message')
    expect(message.content[0]).toEqual({ type: 'text', text: `Hello from the simulator (bedrock/${MODEL_ID}).` })
  })

  it('serves the Responses surface from Bedrock through the chat translation', async () => {
    const response = await fetch(`${gateway.url}/v1/responses`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bedrock/claude-sonnet-4-5', input: 'Hi' }),
    })
    expect(response.status).toBe(200)
    const body = await response.json() as { object: string; output: Array<{ type: string; content: Array<{ type: string; text: string }> }> }
    expect(body.object).toBe('response')
    const message = body.output.find((item) => item.type === 'message')
    expect(message?.content[0]?.text).toBe(`Hello from the simulator (bedrock/${MODEL_ID}).`)
  })
})
