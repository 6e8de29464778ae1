/**
 * Real agent CLIs' requests (issue 37): the first requests of Claude Code, Codex CLI and
 * OpenCode (with its Anthropic, OpenAI and OpenAI-compatible providers), and Codex's turn after the model called a namespaced tool, recorded from the
 * CLIs themselves (fixtures/clients/*.json, made by
 * scripts/record-clients.mjs; versions and dates inside), replayed as they came (headers and
 * bodies) through a gateway process against the simulator, on every surface each applies to:
 * Messages natively at Anthropic and translated to OpenAI, Responses natively at OpenAI and
 * translated to Anthropic, chat completions to OpenAI and translated to Anthropic.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { simulatorServiceAccount } from '@switchboard/simulator'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

/** One recorded request. */
interface ClientFixture {
  client: string
  version: string
  surface: 'messages' | 'responses' | 'chat'
  path: string
  headers: Record<string, string>
  body: Record<string, any>
}

const directory = fileURLToPath(new URL('./fixtures/clients/', import.meta.url))
const fixtures = new Map<string, ClientFixture>(readdirSync(directory).filter((file) => file.endsWith('.json')).map((file) => [file.replace(/\.json$/, ''), JSON.parse(readFileSync(join(directory, file), 'utf8')) as ClientFixture]))
const fixture = (name: string): ClientFixture => fixtures.get(name) ?? expect.unreachable(`fixture ${name}`)

let simulator: SimulatorProcess
let gateway: GatewayProcess

beforeAll(async () => {
  simulator = await startSimulator()
  const network = { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 50 }
  const models = (provider: string) => [...new Set([...fixtures.values()].map((recorded) => recorded.body.model as string).concat(provider === 'openai' ? ['gpt-4o-mini'] : []))]
  gateway = await startGateway({
    providers: {
      anthropic: { keys: [1, 2].map((index) => ({ name: `ant-${index}`, value: `sk-ant-key-${index}`, models: models('anthropic'), weight: 1 })), network_config: network },
      openai: { keys: [1, 2].map((index) => ({ name: `oa-${index}`, value: `sk-oa-key-${index}`, models: models('openai'), weight: 1 })), network_config: network },
      // Claude on Vertex AI: Messages natively (rawPredict), where some of Claude Code's beta flags are refused.
      vertex: {
        keys: [{
          name: 'gcp', value: 'service-account', models: models('anthropic'), weight: 1,
          vertex_key_config: { project_id: 'clients-project', region: 'us-east5', auth_credentials: simulatorServiceAccount('clients@clients-project.iam.gserviceaccount.com', 'clients-project', `${simulator.url}/token`) },
        }],
        network_config: network,
      },
    },
  })
}, 90_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

interface Replayed {
  status: number
  /** The JSON answer, or every event of a stream (parsed `data`). */
  events: Record<string, any>[]
  extra: { provider: string | null; key_name: string | null; routing_log?: string[] }
  text: string
}

/** Sends the recorded request as it came, with `model` (and any `change`) swapped in, and reads the whole answer. */
async function replay(recorded: ClientFixture, model: string, change: (body: Record<string, any>) => void = () => {}, headers: Record<string, string> = {}): Promise<Replayed> {
  const body = structuredClone(recorded.body)
  body.model = model
  change(body)
  const response = await fetch(`${gateway.url}${recorded.path}`, { method: 'POST', headers: { ...recorded.headers, 'x-bf-routing-log': 'true', ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) })
  const text = await response.text()
  const events = (response.headers.get('content-type') ?? '').includes('text/event-stream')
    ? text.split('\n').filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]').map((line) => JSON.parse(line.slice(6)) as Record<string, any>)
    : [JSON.parse(text) as Record<string, any>]
  const last = [...events].reverse().find((event) => event.extra_fields !== undefined || event.response?.extra_fields !== undefined)
  return { status: response.status, events, extra: last?.extra_fields ?? last?.response?.extra_fields ?? {}, text }
}

/** The simulator's record of the requests it got, with the fields these tests read. */
async function upstreamRequests(): Promise<{ provider: string; path?: string; key_suffix: string; anthropic_beta?: string; status: number }[]> {
  return (await simulator.requests()) as never
}

const routingLog = (replayed: Replayed) => (replayed.extra.routing_log ?? []).join('\n')

describe('Claude Code (Messages)', () => {
  const claude = () => fixture('claude-code')

  it('was recorded with a system turn inside messages and beta flags newer than the gateway', () => {
    expect(claude().body.messages.map((message: { role: string }) => message.role)).toContain('system')
    expect(claude().headers['anthropic-beta']).toMatch(/,/)
    expect(claude().body.stream).toBe(true)
  })

  it('natively at Anthropic: served as it came, anthropic-beta forwarded unchanged (was a 400 from the gateway itself)', async () => {
    const replayed = await replay(claude(), `anthropic/${claude().body.model}`)
    expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
    expect(replayed.events[0]?.type).toBe('message_start')
    expect(replayed.events.at(-1)?.type).toBe('message_stop')
    expect(replayed.extra.provider).toBe('anthropic')
    const sent = await upstreamRequests()
    expect(sent).toHaveLength(1)
    expect(sent[0]).toMatchObject({ provider: 'anthropic', path: '/v1/messages', status: 200, anthropic_beta: claude().headers['anthropic-beta'] })
  })

  it('translated to OpenAI: served, the system turn mapped; the routing log says anthropic-beta stayed behind', async () => {
    const replayed = await replay(claude(), 'openai/gpt-4o-mini')
    expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
    expect(replayed.events.at(-1)?.type).toBe('message_stop')
    expect(replayed.extra.provider).toBe('openai')
    expect(routingLog(replayed)).toContain(`anthropic-beta (${claude().headers['anthropic-beta']}) not sent`)
    const sent = await upstreamRequests()
    expect(sent.map((request) => [request.provider, request.path, request.anthropic_beta])).toEqual([['openai', '/v1/chat/completions', undefined]])
  })

  it('its body counts tokens: natively at Anthropic, estimated for a model only OpenAI serves', async () => {
    const counting = { ...claude(), path: '/v1/messages/count_tokens' }
    const strip = (body: Record<string, any>) => { delete body.stream; delete body.max_tokens }
    const native = await replay(counting, `anthropic/${claude().body.model}`, strip)
    expect(native.status, native.text.slice(0, 300)).toBe(200)
    expect(native.events[0]).toMatchObject({ input_tokens: expect.any(Number), extra_fields: { provider: 'anthropic' } })
    expect((await upstreamRequests())[0]).toMatchObject({ path: '/v1/messages/count_tokens', anthropic_beta: claude().headers['anthropic-beta'] })
    const estimated = await replay(counting, 'gpt-4o-mini', strip)
    expect(estimated.status, estimated.text.slice(0, 300)).toBe(200)
    expect(estimated.events[0]).toMatchObject({ input_tokens: expect.any(Number), extra_fields: { estimated: true } })
  })

  it('natively at Claude on Vertex, which refuses two of its flags: learned from the refusal, left out (routing log), the rest unchanged', async () => {
    const header = claude().headers['anthropic-beta']!
    const refused = ['effort-2025-11-24', 'prompt-caching-scope-2026-01-05']
    expect(header.split(',')).toEqual(expect.arrayContaining(refused))
    await simulator.setRules([{ provider: 'vertex', refuses_betas: refused }])
    const kept = header.split(',').filter((flag) => !refused.includes(flag)).join(',')
    for (const round of ['learns', 'knows']) {
      await simulator.resetRequests()
      const replayed = await replay(claude(), `vertex/${claude().body.model}`)
      expect(replayed.status, `${round}: ${replayed.text.slice(0, 300)}`).toBe(200)
      expect(replayed.extra.provider).toBe('vertex')
      expect(routingLog(replayed)).toContain(`anthropic-beta: left out ${header.split(',').filter((flag) => refused.includes(flag)).join(', ')}: vertex (Claude on Vertex AI) refused them`)
      const sent = (await upstreamRequests()).map((request) => [request.status, request.anthropic_beta])
      // The first request meets the refusal once (one extra round trip per node); later ones leave the flags out up front.
      expect(sent).toEqual(round === 'learns' ? [[400, header], [200, kept]] : [[200, kept]])
    }
  })

  it('keeps its session (x-claude-code-session-id) on one key', async () => {
    const keys = new Set<string | null>()
    for (let index = 0; index < 4; index++) keys.add((await replay(claude(), `anthropic/${claude().body.model}`)).extra.key_name)
    expect(keys.size).toBe(1)
  })
})

describe('OpenCode (Messages, with @ai-sdk/anthropic)', () => {
  const opencode = () => fixture('opencode-messages')

  it('natively at Anthropic with its beta forwarded, and translated to OpenAI', async () => {
    const native = await replay(opencode(), `anthropic/${opencode().body.model}`)
    expect(native.status, native.text.slice(0, 300)).toBe(200)
    expect(native.extra.provider).toBe('anthropic')
    expect((await upstreamRequests())[0]?.anthropic_beta).toBe(opencode().headers['anthropic-beta'])
    const translated = await replay(opencode(), 'openai/gpt-4o-mini')
    expect(translated.status, translated.text.slice(0, 300)).toBe(200)
    expect(translated.extra.provider).toBe('openai')
    expect(translated.events.at(-1)?.type).toBe('message_stop')
  })
})

describe('Codex CLI (Responses)', () => {
  const codex = () => fixture('codex')

  it('was recorded with session-id, thread-id, a namespace tool and OpenAI\'s web search', () => {
    expect(codex().headers).toMatchObject({ 'session-id': expect.any(String), 'thread-id': expect.any(String), 'x-client-request-id': expect.any(String) })
    expect(codex().body.tools.map((tool: { type: string }) => tool.type)).toEqual(expect.arrayContaining(['function', 'namespace', 'web_search']))
  })

  it('natively at OpenAI: served as it came', async () => {
    const replayed = await replay(codex(), 'openai/gpt-4o-mini')
    expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
    expect(replayed.events.at(-1)?.type).toBe('response.completed')
    expect(replayed.extra.provider).toBe('openai')
    expect((await upstreamRequests()).map((request) => request.path)).toEqual(['/v1/responses'])
  })

  it('translated to Anthropic: served, namespaces flattened, web search left out (said in the routing log), no anthropic-beta added', async () => {
    const replayed = await replay(codex(), `anthropic/${codex().body.model}`)
    expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
    expect(replayed.events.at(-1)?.type).toBe('response.completed')
    expect(replayed.extra.provider).toBe('anthropic')
    expect(routingLog(replayed)).toContain('left out web_search: hosted tools run at OpenAI only')
    const sent = await upstreamRequests()
    expect(sent).toHaveLength(1)
    expect(sent[0]).toMatchObject({ provider: 'anthropic', path: '/v1/messages', status: 200 })
    expect(sent[0]!.anthropic_beta).toBeUndefined()
  })

  it('translated to Anthropic: a call of a namespaced tool reaches Codex with its own name and namespace', async () => {
    // The simulator calls the tool a request forces; Codex itself leaves the choice to the model.
    const replayed = await replay(codex(), `anthropic/${codex().body.model}`, (body) => { body.tool_choice = { type: 'function', namespace: 'multi_agent_v1', name: 'close_agent' } })
    expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
    const done = replayed.events.find((event) => event.type === 'response.output_item.done' && event.item?.type === 'function_call')
    expect(done?.item).toMatchObject({ type: 'function_call', name: 'close_agent', namespace: 'multi_agent_v1' })
    const completed = replayed.events.at(-1)!
    expect(completed.response.output).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'close_agent', namespace: 'multi_agent_v1' })]))
  })

  it('its next turn, the namespaced call and its output in the history: served natively and translated to Anthropic', async () => {
    const turn = fixture('codex-namespace-call')
    expect(turn.body.input).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'function_call', namespace: 'multi_agent_v1', name: 'close_agent' }), expect.objectContaining({ type: 'function_call_output' })]))
    for (const [model, provider] of [['openai/gpt-4o-mini', 'openai'], [`anthropic/${turn.body.model}`, 'anthropic']]) {
      const replayed = await replay(turn, model!)
      expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
      expect(replayed.events.at(-1)?.type).toBe('response.completed')
      expect(replayed.extra.provider).toBe(provider)
    }
  })

  it('a session sent with session-id keeps its key, and the request log shows the session', async () => {
    const session = `codex-session-${Date.now()}`
    const keys: (string | null)[] = []
    for (let index = 0; index < 6; index++) {
      const replayed = await replay(codex(), 'openai/gpt-4o-mini', () => {}, { 'session-id': session, 'thread-id': session, 'x-client-request-id': `request-${index}` })
      expect(replayed.status).toBe(200)
      keys.push(replayed.extra.key_name)
    }
    expect(new Set(keys).size, keys.join(', ')).toBe(1)
    const until = Date.now() + 10_000
    let logs: { requested: { session_id: string | null }; routing: { session_kept: boolean | null } }[] = []
    while (logs.length < 6 && Date.now() < until) {
      logs = ((await (await fetch(`${gateway.url}/api/logs?session_id=${session}&limit=50`)).json()) as { logs: typeof logs }).logs
      if (logs.length < 6) await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(logs).toHaveLength(6)
    expect(logs.every((entry) => entry.requested.session_id === session)).toBe(true)
    expect(logs.filter((entry) => entry.routing.session_kept === true)).toHaveLength(5)
  })
})

describe('OpenCode (Responses, with @ai-sdk/openai)', () => {
  const opencode = () => fixture('opencode-responses')

  it('natively at OpenAI and translated to Anthropic, its session (session-id, as Codex sends it) on one key', async () => {
    expect(opencode().headers['session-id']).toBeTruthy()
    for (const [model, provider] of [[`openai/${opencode().body.model}`, 'openai'], ['anthropic/claude-sonnet-4-5', 'anthropic']]) {
      const keys = new Set<string | null>()
      for (let index = 0; index < 3; index++) {
        const replayed = await replay(opencode(), model!)
        expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
        expect(replayed.events.at(-1)?.type).toBe('response.completed')
        expect(replayed.extra.provider).toBe(provider)
        keys.add(replayed.extra.key_name)
      }
      expect(keys.size).toBe(1)
    }
  })
})

describe('OpenCode (chat completions, with @ai-sdk/openai-compatible)', () => {
  const opencode = () => fixture('opencode-chat')

  it('served by OpenAI and translated to Anthropic, its session (x-session-affinity) on one key', async () => {
    for (const model of ['openai/gpt-4o-mini', `anthropic/${opencode().body.model}`]) {
      const keys = new Set<string | null>()
      for (let index = 0; index < 3; index++) {
        const replayed = await replay(opencode(), model)
        expect(replayed.status, replayed.text.slice(0, 300)).toBe(200)
        expect(replayed.events.at(-1)?.choices).toBeDefined()
        keys.add(replayed.extra.key_name)
      }
      expect(keys.size).toBe(1)
    }
    expect(new Set((await upstreamRequests()).map((request) => request.provider))).toEqual(new Set(['openai', 'anthropic']))
  })
})
