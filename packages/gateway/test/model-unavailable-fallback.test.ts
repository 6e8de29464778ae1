/**
 * A primary that answers "this model is not available to this key" is not a request error:
 * the request is served by its fallback. Each case sends one recorded provider error shape
 * (the classifier's fixtures, so the shape tested here is the shape documented there) from
 * the simulator process through a real gateway process.
 *
 * Mistral, Groq, Bedrock and Vertex are configured as OpenAI-compatible upstreams (each offers
 * an OpenAI-compatible chat endpoint) on the simulator, which answers their error shapes
 * verbatim, status, headers and body.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ERROR_FIXTURES, type ErrorFixture } from '../../providers/test/fixtures/errors.ts'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

const FALLBACK = 'openai/gpt-4o-mini'
const messages = [{ role: 'user', content: 'Say hello' }]

/** Each primary provider, the one key it has, and the model the request asks it for. */
const PRIMARIES = {
  anthropic: { key: 'sk-ant-primary-1111', model: 'claude-3-5-haiku-latest' },
  mistral: { key: 'mistral-primary-2222', model: 'mistral-large-latest' },
  groq: { key: 'gsk-primary-3333', model: 'playai-tts' },
  bedrock: { key: 'bedrock-primary-4444', model: 'anthropic.claude-3-5-sonnet-20241022-v2:0' },
  vertex: { key: 'vertex-primary-5555', model: 'claude-3-5-sonnet@20240620' },
  edge: { key: 'edge-primary-6666', model: 'gpt-4o-mini' },
} as const

type Primary = keyof typeof PRIMARIES

/** The model-not-available shapes of issue #12, by fixture name, and what the primary's attempt must be classed. */
const CASES: { fixture: string; primary: Primary; failureClass: string }[] = [
  { fixture: 'mistral 400 unknown_model', primary: 'mistral', failureClass: 'model_access' },
  { fixture: 'mistral 400 invalid model', primary: 'mistral', failureClass: 'model_access' },
  { fixture: 'groq 400 model_terms_required', primary: 'groq', failureClass: 'model_access' },
  { fixture: 'anthropic 404 not_found_error for a model', primary: 'anthropic', failureClass: 'model_access' },
  { fixture: 'anthropic 404 not_found_error: model not available', primary: 'anthropic', failureClass: 'model_access' },
  { fixture: 'bedrock 400 ValidationException: model identifier invalid', primary: 'bedrock', failureClass: 'model_access' },
  { fixture: 'bedrock 400 ValidationException: on-demand throughput not supported', primary: 'bedrock', failureClass: 'model_access' },
  { fixture: 'vertex 400 FAILED_PRECONDITION: project not allowed to use the publisher model', primary: 'vertex', failureClass: 'model_access' },
  { fixture: 'vertex 400 FAILED_PRECONDITION: model not servable in the region', primary: 'vertex', failureClass: 'model_access' },
  // A wrong upstream path (a 404 or 405 with no JSON error) is no request error either.
  { fixture: 'openai 404 with no body is a wrong upstream path', primary: 'edge', failureClass: 'unknown' },
  { fixture: 'openai 405 method not allowed is a wrong upstream path', primary: 'edge', failureClass: 'unknown' },
]

function fixtureNamed(name: string): ErrorFixture {
  const fixture = ERROR_FIXTURES.find((candidate) => candidate.name === name)
  if (fixture === undefined) throw new Error(`no error fixture named "${name}"`)
  return fixture
}

beforeAll(async () => {
  simulator = await startSimulator()
  const url = simulator.url
  // max_retries 1 and short backoffs: an `unknown` answer is retried once on the same key, then the fallback is tried.
  const network = { base_url: url, retry_backoff_initial: 10, retry_backoff_max: 20, max_retries: 1 }
  const compatible = (primary: Primary) => ({
    keys: [{ name: `${primary}-1`, value: PRIMARIES[primary].key, models: [PRIMARIES[primary].model], weight: 1 }],
    network_config: network,
    custom_provider_config: { base_provider_type: 'openai' },
  })
  gateway = await startGateway({
    providers: {
      openai: { keys: [{ name: 'fallback-1', value: 'sk-fallback-7777', models: ['gpt-4o-mini'], weight: 1 }], network_config: network },
      anthropic: { keys: [{ name: 'anthropic-1', value: PRIMARIES.anthropic.key, models: [PRIMARIES.anthropic.model], weight: 1 }], network_config: network },
      mistral: compatible('mistral'),
      groq: compatible('groq'),
      bedrock: compatible('bedrock'),
      vertex: compatible('vertex'),
      edge: compatible('edge'),
    },
  })
}, 60_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(async () => {
  await simulator.resetRequests()
  // Each case starts with no held keys: a hold from one case must not decide the next.
  const cleared = await fetch(`${gateway.url}/api/adaptive-routing/conditions/clear`, { method: 'POST' })
  expect(cleared.status).toBe(200)
})

/** Sends a chat request to the gateway and reads its JSON answer (`any`: an arbitrary JSON document, checked field by field by each test). */
async function chat(body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: response.status, json: await response.json() }
}

interface Attempt {
  provider: string
  model: string
  status: number
  failure_class: string | null
}

describe('a primary whose model is not available is served by the fallback', () => {
  it.each(CASES)('$fixture', async ({ fixture: name, primary, failureClass }) => {
    const fixture = fixtureNamed(name)
    const { key, model } = PRIMARIES[primary]
    await simulator.setRules([{ key, fault: { status: fixture.status, headers: fixture.headers, body: fixture.body } }])

    const { status, json } = await chat({ model: `${primary}/${model}`, messages, fallbacks: [FALLBACK] })

    expect(status, JSON.stringify(json)).toBe(200)
    expect(json.choices).toHaveLength(1)
    expect(json.extra_fields).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini' })
    const attempts: Attempt[] = json.extra_fields.attempts
    const refused = attempts.slice(0, -1)
    expect(refused.length).toBeGreaterThan(0)
    for (const attempt of refused) expect(attempt).toMatchObject({ provider: primary, model, status: fixture.status, failure_class: failureClass })
    expect(attempts.at(-1)).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', status: 200, failure_class: null })

    // The simulator saw the primary's refusals, then the fallback's one request.
    const seen = await simulator.requests()
    expect(seen.map((request) => request.status)).toEqual([...refused.map(() => fixture.status), 200])
    expect(seen.at(-1)).toMatchObject({ model: 'gpt-4o-mini', status: 200 })
  })

  it('still answers a request the provider calls malformed at once, with no fallback', async () => {
    const fixture = fixtureNamed('mistral 422 validation detail object as the message')
    await simulator.setRules([{ key: PRIMARIES.mistral.key, fault: { status: fixture.status, headers: fixture.headers, body: fixture.body } }])
    const { status, json } = await chat({ model: `mistral/${PRIMARIES.mistral.model}`, messages, fallbacks: [FALLBACK] })
    expect(status).toBe(422)
    expect(json.error.code).toBe('upstream_rejected_request')
    expect(json.extra_fields.attempts).toEqual([expect.objectContaining({ provider: 'mistral', failure_class: 'caller_fault' })])
    expect((await simulator.requests()).map((request) => request.status)).toEqual([422])
  })
})
