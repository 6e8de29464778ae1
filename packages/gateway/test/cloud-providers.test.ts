/**
 * Bedrock, Vertex AI and the Gemini API end to end (issue 20), in real processes: one bare model
 * served by Anthropic, Bedrock and Vertex (Claude through rawPredict); traffic moves off
 * Bedrock while it fails and comes back once it recovers; a Vertex key that lost access to one
 * model is held on that model only; Vertex credentials redacted by the providers API.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { simulatorSecretKey, simulatorServiceAccount } from '@switchboard/simulator'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const ACCESS_KEY = 'AKIACLOUDTEST0001'
const EMAIL = 'switchboard-test@cloud-project.iam.gserviceaccount.com'
const MODEL = 'claude-sonnet-4-5'

let simulator: SimulatorProcess
let gateway: GatewayProcess
let client: OpenAI

interface Served {
  status: number
  provider: string | undefined
  keyId: string | undefined
}

beforeAll(async () => {
  simulator = await startSimulator()
  const network = { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 50 }
  gateway = await startGateway({
    providers: {
      anthropic: { keys: [{ name: 'claude-direct', value: 'sk-ant-cloud-0001', models: [MODEL], weight: 1 }], network_config: network },
      bedrock: {
        keys: [{
          name: 'aws-prod', value: 'sigv4', models: [MODEL], weight: 1,
          bedrock_key_config: { access_key: ACCESS_KEY, secret_key: simulatorSecretKey(ACCESS_KEY), region: 'us-east-1', deployments: { [MODEL]: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' } },
        }],
        network_config: network,
      },
      vertex: {
        keys: [{
          name: 'gcp-prod', value: 'service-account', models: [MODEL, 'gemini-2.5-pro', 'gemini-2.5-flash'], weight: 1,
          aliases: { [MODEL]: 'claude-sonnet-4-5@20250929' },
          vertex_key_config: { project_id: 'cloud-project', region: 'us-east5', auth_credentials: simulatorServiceAccount(EMAIL, 'cloud-project', `${simulator.url}/token`) },
        }],
        network_config: network,
      },
      gemini: { keys: [{ name: 'ai-studio', value: 'AIzaCloudTestKey0001', models: ['gemini-2.5-flash'], weight: 1 }], network_config: network },
    },
  })
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused-by-the-gateway', maxRetries: 0 })
}, 90_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

async function chat(model: string): Promise<Served> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }] }),
  })
  const body = await response.json() as { extra_fields?: { provider?: string; key_id?: string } }
  return { status: response.status, provider: body.extra_fields?.provider, keyId: body.extra_fields?.key_id }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a bare model on Anthropic, Bedrock and Vertex', () => {
  it('is served by all three, Vertex through rawPredict with an OAuth2 token', async () => {
    const seen = new Set<string>()
    const deadline = Date.now() + 20_000
    while (seen.size < 3 && Date.now() < deadline) {
      const served = await chat(MODEL)
      expect(served.status).toBe(200)
      seen.add(served.provider!)
    }
    expect([...seen].sort()).toEqual(['anthropic', 'bedrock', 'vertex'])
    const vertex = (await simulator.requests()).filter((request) => request.provider === 'vertex')
    expect(vertex.length).toBeGreaterThan(0)
    expect(vertex.every((request) => request.status === 200 && request.model === 'claude-sonnet-4-5@20250929')).toBe(true)
  })

  it('moves off Bedrock while it fails, with no failed request, and comes back once it recovers', async () => {
    await simulator.setRules([{ provider: 'bedrock', fault: 'unavailable' }])
    // Every request is served meanwhile (the attempt on Bedrock falls back within the request) ...
    const failedBy = Date.now() + 30_000
    let bedrockState: string | undefined
    while (bedrockState !== 'failed' && Date.now() < failedBy) {
      const served = await chat(MODEL)
      expect(served.status).toBe(200)
      expect(served.provider).not.toBe('bedrock')
      const routes = ((await (await fetch(`${gateway.url}/api/adaptive-routing/routes`)).json()) as { routes: Array<{ provider: string; model: string; state: string }> }).routes
      bedrockState = routes.find((route) => route.provider === 'bedrock' && route.model === MODEL)?.state
      if (bedrockState !== 'failed') await sleep(100)
    }
    expect(bedrockState).toBe('failed')
    // ... and once Bedrock's route has failed, the bare model's traffic no longer goes there at all.
    const before = (await simulator.requests()).filter((request) => request.provider === 'bedrock').length
    for (let index = 0; index < 20; index++) expect(await chat(MODEL)).toMatchObject({ status: 200 })
    expect((await simulator.requests()).filter((request) => request.provider === 'bedrock').length).toBe(before)
    // The outage ends: after the route's breaker, Bedrock gets live traffic again and serves it.
    await simulator.setRules([])
    const deadline = Date.now() + 75_000
    let back: Served | undefined
    while (back === undefined && Date.now() < deadline) {
      const served = await chat(MODEL)
      expect(served.status).toBe(200)
      if (served.provider === 'bedrock') back = served
      else await sleep(100)
    }
    expect(back?.provider).toBe('bedrock')
  }, 100_000)

  it('holds the Vertex key on the model it lost, and on that model only', async () => {
    await simulator.setRules([{ provider: 'vertex', key: EMAIL, model: 'gemini-2.5-pro', fault: 'model_access' }])
    const lost = await chat('vertex/gemini-2.5-pro')
    expect(lost.status).toBeGreaterThanOrEqual(400)
    let conditions: Array<Record<string, unknown>> = []
    const deadline = Date.now() + 10_000
    while (conditions.length === 0 && Date.now() < deadline) {
      conditions = ((await (await fetch(`${gateway.url}/api/adaptive-routing/conditions`)).json()) as { conditions: Array<Record<string, unknown>> }).conditions
      if (conditions.length === 0) await sleep(100)
    }
    expect(conditions).toHaveLength(1)
    expect(conditions[0]).toMatchObject({ provider: 'vertex', key_name: 'gcp-prod', model: 'gemini-2.5-pro', reason: 'model_access' })
    expect(String(conditions[0]!.message)).toContain("Permission 'aiplatform.endpoints.predict' denied")
    // The same key keeps serving its other models.
    expect(await chat('vertex/gemini-2.5-flash')).toMatchObject({ status: 200, provider: 'vertex' })
    expect(await chat(`vertex/${MODEL}`)).toMatchObject({ status: 200, provider: 'vertex' })
    // A bare request for the lost model's siblings still picks the key: the hold is not on the whole key.
    const routes = ((await (await fetch(`${gateway.url}/api/adaptive-routing/routes`)).json()) as { routes: Array<{ provider: string; model: string; state: string }> }).routes
    expect(routes.filter((route) => route.provider === 'vertex' && route.model !== 'gemini-2.5-pro').every((route) => route.state !== 'failed')).toBe(true)
  })
})

describe('Gemini API and Vertex keys through the gateway', () => {
  it('streams a Gemini API model with the official OpenAI client', async () => {
    const stream = await client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', stream: true, messages: [{ role: 'user', content: 'Hi' }] })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('Hello from the simulator (gemini/gemini-2.5-flash).')
  })

  it('streams a tool call on the Anthropic Messages surface from Claude on Vertex, sent natively (streamRawPredict)', async () => {
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'unused-by-the-gateway', maxRetries: 0 })
    const message = await anthropic.messages.stream({
      model: `vertex/${MODEL}`, max_tokens: 200, messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'tool', name: 'get_weather' },
    }).finalMessage()
    expect(message.stop_reason).toBe('tool_use')
    expect(message.content.find((block) => block.type === 'tool_use')).toMatchObject({ name: 'get_weather', input: { city: 'simulated' } })
    // Vertex's own message and tool-use ids came through: the body went as Anthropic's, not through chat.
    expect(message.id).toMatch(/^msg_vrtx_/)
    const last = (await simulator.requests()).filter((request) => request.provider === 'vertex').at(-1)
    expect(last).toMatchObject({ stream: true, status: 200, model: 'claude-sonnet-4-5@20250929' })
  })

  it('serves the Responses surface from the Gemini API, streamed', async () => {
    const stream = await client.responses.create({ model: 'gemini/gemini-2.5-flash', input: 'Hi', stream: true })
    let text = ''
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta
    expect(text).toBe('Hello from the simulator (gemini/gemini-2.5-flash).')
  })

  it('shows the service-account credentials redacted, and a redacted PUT back keeps them working', async () => {
    const response = await fetch(`${gateway.url}/api/providers/vertex`)
    const text = await response.text()
    expect(text).not.toContain('PRIVATE KEY')
    const shown = JSON.parse(text) as { keys: Array<Record<string, any>> }
    expect(shown.keys[0]!.vertex_key_config).toMatchObject({ project_id: 'cloud-project', region: 'us-east5' })
    const { name: _name, type: _type, ...body } = shown as Record<string, unknown>
    const put = await fetch(`${gateway.url}/api/providers/vertex`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    expect(put.status, await put.clone().text()).toBeLessThan(300)
    expect(await chat('vertex/gemini-2.5-flash')).toMatchObject({ status: 200, provider: 'vertex' })
  })

  it('refuses a Vertex key without usable credentials with a message naming the field', async () => {
    const response = await fetch(`${gateway.url}/api/providers`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'vertex-broken', custom_provider_config: { base_provider_type: 'vertex' }, keys: [{ name: 'k', value: 'not-json', models: ['*'], weight: 1, vertex_key_config: { project_id: 'cloud-project', region: 'us-east5' } }] }),
    })
    expect(response.status).toBe(400)
    expect(await response.text()).toMatch(/keys\[0\]\.value: the service-account credentials are not JSON/)
  })
})
