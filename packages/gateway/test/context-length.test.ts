/**
 * A prompt over the primary's context window is no caller fault: the provider's other keys
 * share the window, but a fallback model with a larger one may serve it. End to end on every
 * surface (chat completions, Anthropic Messages, OpenAI Responses), streamed and not: a gateway
 * process in front of a simulator process. A content filter's 400 stays the caller's error at
 * once, with no fallback.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ERROR_FIXTURES, type ErrorFixture } from '../../providers/test/fixtures/errors.ts'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

const PRIMARY = 'openai/gpt-4o-mini'
const FALLBACK = 'anthropic/claude-3-5-haiku-latest'
/** The simulator's words for its `context_length_exceeded` preset at OpenAI. */
const OPENAI_CONTEXT_WORDS = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."

interface Attempt { provider: string; key_name: string; status: number; failure_class: string | null }
interface ExtraFields { provider: string | null; model: string | null; attempts: Attempt[] }

/** What came back, read the same way whatever the surface and framing. */
interface Answer {
  status: number
  requestId: string
  extra: ExtraFields
  /** The error object of an error answer (`error` of the OpenAI or the Anthropic shape), else null. */
  error: { message: string; type: string; code: string } | null
  /** True when the answer came as an event stream, false for a JSON answer. */
  streamed: boolean
}

interface Surface {
  name: string
  path: string
  body(model: string, fallbacks: string[], stream: boolean): Record<string, unknown>
}

const SURFACES: Surface[] = [
  {
    name: 'chat completions',
    path: '/v1/chat/completions',
    body: (model, fallbacks, stream) => ({ model, messages: [{ role: 'user', content: 'Summarise this very long document.' }], fallbacks, stream }),
  },
  {
    name: 'Anthropic Messages',
    path: '/v1/messages',
    body: (model, fallbacks, stream) => ({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Summarise this very long document.' }], fallbacks, stream }),
  },
  {
    name: 'OpenAI Responses',
    path: '/v1/responses',
    body: (model, fallbacks, stream) => ({ model, input: 'Summarise this very long document.', fallbacks, stream }),
  },
]

/** OpenAI-compatible primaries: the key each has and the model a request asks it for. */
const COMPATIBLE = {
  bedrock: { key: 'bedrock-ctx-5555', model: 'anthropic.claude-3-5-sonnet-20241022-v2:0' },
  vertex: { key: 'vertex-ctx-6666', model: 'gemini-2.0-flash' },
  groq: { key: 'gsk-ctx-7777', model: 'llama-3.3-70b-versatile' },
  mistral: { key: 'mistral-ctx-8888', model: 'mistral-small-latest' },
  openrouter: { key: 'sk-or-ctx-9999', model: 'meta-llama/llama-3.3-70b-instruct' },
  vllm: { key: 'vllm-ctx-0000', model: 'qwen2.5-7b-instruct' },
} as const

/** Each provider's recorded words for a prompt over the window (the classifier's fixtures), and the primary that answers them. */
const PROVIDER_WORDS: { fixture: string; primary: string; key: string }[] = [
  { fixture: 'azure 400 context length exceeded', primary: 'azure/gpt-4o', key: 'azkey-ctx-3333' },
  { fixture: 'anthropic 400 prompt too long', primary: 'anthropic/claude-3-5-haiku-latest', key: 'sk-ant-ctx-4444' },
  ...(
    [
      ['bedrock 400 ValidationException: input too long', 'bedrock'],
      ['gemini 400 input token count exceeds the maximum', 'vertex'],
      ['groq 400 context_length_exceeded', 'groq'],
      ["mistral 400 prompt too large for the model's maximum context length", 'mistral'],
      ["openrouter 400 endpoint's maximum context length", 'openrouter'],
      ['vllm 400 prompt over max_model_len (top-level ErrorResponse)', 'vllm'],
      ['vllm 400 prompt over max_model_len (under error)', 'vllm'],
    ] as const
  ).map(([fixture, name]) => ({ fixture, primary: `${name}/${COMPATIBLE[name].model}`, key: COMPATIBLE[name].key })),
]

const CASES = SURFACES.flatMap((surface) => [false, true].map((stream) => ({ surface, stream, label: `${surface.name}${stream ? ', streamed' : ''}` })))

function fixtureNamed(name: string): ErrorFixture {
  const fixture = ERROR_FIXTURES.find((candidate) => candidate.name === name)
  if (fixture === undefined) throw new Error(`no error fixture named "${name}"`)
  return fixture
}

/** The message of a recorded error body (OpenAI shape: `error.message`). */
function fixtureMessage(fixture: ErrorFixture): string {
  return (fixture.body as { error: { message: string } }).error.message
}

async function send(surface: Surface, model: string, fallbacks: string[], stream: boolean): Promise<Answer> {
  const response = await fetch(`${gateway.url}${surface.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(surface.body(model, fallbacks, stream)),
    signal: AbortSignal.timeout(20_000),
  })
  const requestId = response.headers.get('x-request-id') ?? ''
  const text = await response.text()
  if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    // Every framing carries extra_fields on its last event before the end.
    const events = text
      .split('\n\n')
      .map((block) => /^data: (.+)$/m.exec(block)?.[1])
      .filter((data): data is string => data !== undefined && data !== '[DONE]')
      .map((data) => JSON.parse(data) as Record<string, unknown>)
    const last = events.findLast((event) => event.extra_fields !== undefined)
    expect(last, `no event with extra_fields in ${text.slice(0, 400)}`).toBeDefined()
    return { status: response.status, requestId, extra: last!.extra_fields as ExtraFields, error: null, streamed: true }
  }
  const json = JSON.parse(text) as { extra_fields: ExtraFields; error?: Answer['error'] }
  return { status: response.status, requestId, extra: json.extra_fields, error: json.error ?? null, streamed: false }
}

beforeAll(async () => {
  simulator = await startSimulator()
  const network = { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 50, max_retries: 2 }
  gateway = await startGateway({
    providers: {
      // Two keys: a prompt over the window must not be sent again on the other one.
      openai: {
        keys: [
          { name: 'oa-1', value: 'sk-ctx-openai-1111', models: ['gpt-4o-mini'], weight: 1 },
          { name: 'oa-2', value: 'sk-ctx-openai-2222', models: ['gpt-4o-mini'], weight: 1 },
        ],
        network_config: network,
      },
      azure: {
        keys: [
          { name: 'az-1', value: 'azkey-ctx-3333', models: ['gpt-4o'], weight: 1, azure_key_config: { deployments: { 'gpt-4o': 'prod-gpt4o' }, api_version: '2024-10-21' } },
        ],
        network_config: network,
      },
      anthropic: {
        keys: [{ name: 'claude-1', value: 'sk-ant-ctx-4444', models: ['claude-3-5-haiku-latest'], weight: 1 }],
        network_config: network,
      },
      // Other providers as OpenAI-compatible upstreams on the simulator, which answers their recorded error shapes verbatim.
      ...Object.fromEntries(
        Object.entries(COMPATIBLE).map(([name, { key, model }]) => [
          name,
          { keys: [{ name: `${name}-1`, value: key, models: [model], weight: 1 }], network_config: network, custom_provider_config: { base_provider_type: 'openai' } },
        ]),
      ),
    },
  })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

describe('a prompt over the primary\'s context window', () => {
  it.each(CASES)('$label: the request\'s fallback serves it, after one attempt on the primary', async ({ surface, stream }) => {
    await simulator.setRules([{ provider: 'openai', fault: 'context_length_exceeded' }])
    const answer = await send(surface, PRIMARY, [FALLBACK], stream)
    expect(answer.status).toBe(200)
    expect(answer.streamed).toBe(stream)
    expect(answer.extra.provider).toBe('anthropic')
    expect(answer.extra.attempts).toEqual([
      expect.objectContaining({ provider: 'openai', status: 400, failure_class: 'context_length' }),
      expect.objectContaining({ provider: 'anthropic', status: 200, failure_class: null }),
    ])
    // No retry and no other key of the primary: its keys share the model's window.
    expect((await simulator.requests()).map((request) => request.provider)).toEqual(['openai', 'anthropic'])
  })

  it.each(CASES)('$label: without a fallback, 400 context_length_exceeded in the provider\'s words', async ({ surface, stream }) => {
    await simulator.setRules([{ provider: 'openai', fault: 'context_length_exceeded' }])
    const answer = await send(surface, PRIMARY, [], stream)
    expect(answer.status).toBe(400)
    expect(answer.streamed).toBe(false)
    expect(answer.error).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded', message: OPENAI_CONTEXT_WORDS })
    expect(answer.extra.attempts).toEqual([expect.objectContaining({ provider: 'openai', status: 400, failure_class: 'context_length' })])
    expect(await simulator.requests()).toHaveLength(1)
  })

  it('when the fallback fails too, for another reason, the caller gets the primary\'s context_length_exceeded', async () => {
    await simulator.setRules([
      { provider: 'openai', fault: 'context_length_exceeded' },
      { provider: 'anthropic', fault: 'server_error' },
    ])
    const answer = await send(SURFACES[0]!, PRIMARY, [FALLBACK], false)
    expect(answer.status).toBe(400)
    expect(answer.error).toMatchObject({ code: 'context_length_exceeded', message: OPENAI_CONTEXT_WORDS })
    expect(answer.extra.attempts[0]).toMatchObject({ provider: 'openai', failure_class: 'context_length' })
    expect(answer.extra.attempts.slice(1).every((attempt) => attempt.provider === 'anthropic' && attempt.failure_class === 'transient')).toBe(true)
  })

  it('holds no key, and the request log stores and filters the class', async () => {
    await simulator.setRules([{ provider: 'openai', fault: 'context_length_exceeded' }])
    for (let index = 0; index < 3; index++) expect((await send(SURFACES[0]!, PRIMARY, [], false)).status).toBe(400)
    const failed = await send(SURFACES[0]!, PRIMARY, [], false)
    const conditions = (await (await fetch(`${gateway.url}/api/adaptive-routing/conditions`)).json()) as unknown[] | { conditions: unknown[] }
    expect(Array.isArray(conditions) ? conditions : conditions.conditions).toEqual([])
    await expect
      .poll(async () => {
        const response = await fetch(`${gateway.url}/api/logs/${failed.requestId}`)
        return response.status === 200 ? ((await response.json()) as { failure_class: string | null; status: number }) : null
      }, { timeout: 15_000, interval: 250 })
      .toMatchObject({ status: 400, failure_class: 'context_length' })
    const listed = (await (await fetch(`${gateway.url}/api/logs?failure_classes=context_length&limit=500`)).json()) as { logs: { id: string; failure_class: string }[]; facets: { failure_classes: Record<string, number> } }
    expect(listed.logs.map((entry) => entry.id)).toContain(failed.requestId)
    expect(listed.logs.every((entry) => entry.failure_class === 'context_length')).toBe(true)
    expect(listed.facets.failure_classes.context_length).toBeGreaterThanOrEqual(4)
  })
})

describe('each provider\'s words for a prompt over the window', () => {
  it.each(PROVIDER_WORDS)('$fixture: the fallback serves it after one attempt', async ({ fixture: name, primary, key }) => {
    const fixture = fixtureNamed(name)
    await simulator.setRules([{ key, fault: { status: fixture.status, headers: fixture.headers, body: fixture.body } }])
    const answer = await send(SURFACES[0]!, primary, [PRIMARY], false)
    expect(answer.status).toBe(200)
    expect(answer.extra.provider).toBe('openai')
    expect(answer.extra.attempts).toEqual([
      expect.objectContaining({ provider: primary.split('/')[0], status: fixture.status, failure_class: 'context_length' }),
      expect.objectContaining({ provider: 'openai', status: 200, failure_class: null }),
    ])
  })
})

describe('a content filter\'s 400 stays the caller\'s error', () => {
  const FILTERS = [
    { primary: PRIMARY, provider: 'openai', fixture: fixtureNamed('openai 400 content policy violation') },
    { primary: 'azure/gpt-4o', provider: 'azure', fixture: fixtureNamed('azure 400 content filter (ResponsibleAIPolicyViolation)') },
  ]
  const FILTER_CASES = CASES.flatMap((each) => FILTERS.map((filter) => ({ ...each, ...filter, label: `${each.label}, ${filter.provider}` })))

  it.each(FILTER_CASES)('$label: answered at once with the provider\'s words, no fallback attempt', async ({ surface, stream, primary, provider, fixture }) => {
    await simulator.setRules([{ provider, fault: { status: fixture.status, headers: fixture.headers, body: fixture.body } }])
    const answer = await send(surface, primary, [FALLBACK], stream)
    expect(answer.status).toBe(400)
    expect(answer.streamed).toBe(false)
    expect(answer.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected_request', message: fixtureMessage(fixture) })
    expect(answer.extra.attempts).toEqual([expect.objectContaining({ provider, status: 400, failure_class: 'caller_fault' })])
    expect((await simulator.requests()).map((request) => request.provider)).toEqual([provider])
  })
})
