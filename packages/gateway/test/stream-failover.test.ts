/**
 * Failover that holds through the stream (issue 35): a gateway process in front of a simulator
 * process whose fault modes break streams the ways providers do. Every case names a primary
 * and one fallback, on chat completions, Anthropic Messages and OpenAI Responses, streamed and
 * not, and reads what the caller gets: one complete answer, or an error that says why.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import OpenAI from 'openai'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

const network = (url: string, extra: Record<string, unknown> = {}) => ({ base_url: url, retry_backoff_initial: 10, retry_backoff_max: 50, ...extra })

beforeAll(async () => {
  simulator = await startSimulator()
  const url = simulator.url
  gateway = await startGateway({
    providers: {
      openai: {
        keys: [{ name: 'oa-1', value: 'sk-primary-1111', models: ['*'], weight: 1 }],
        network_config: network(url),
      },
      anthropic: {
        keys: [{ name: 'claude-1', value: 'sk-ant-2222', models: ['*'], weight: 1 }],
        network_config: network(url),
      },
      backup: {
        keys: [{ name: 'backup-1', value: 'sk-backup-3333', models: ['*'], weight: 1 }],
        network_config: network(url, { max_retries: 0 }),
        custom_provider_config: { base_provider_type: 'openai' },
      },
    },
  })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

type Surface = 'chat' | 'messages' | 'responses'
const SURFACES: Surface[] = ['chat', 'messages', 'responses']

/** The path and body of a request on a surface, for `model` with `fallbacks`. */
function requestOn(surface: Surface, model: string, fallbacks: string[], stream: boolean): { path: string; body: Record<string, unknown> } {
  if (surface === 'messages') return { path: '/v1/messages', body: { model, max_tokens: 200, messages: [{ role: 'user', content: 'Say hello' }], stream, fallbacks } }
  if (surface === 'responses') return { path: '/v1/responses', body: { model, input: 'Say hello', stream, fallbacks } }
  return { path: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: 'Say hello' }], stream, fallbacks } }
}

/** One SSE event: its name (when it has one) and its data. */
interface SseEvent {
  event: string | undefined
  data: string
}

function parseSse(text: string): { events: SseEvent[]; comments: number } {
  const events: SseEvent[] = []
  let comments = 0
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue
    let event: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments++
      else if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data.push(line.slice(6))
    }
    if (data.length > 0) events.push({ event, data: data.join('\n') })
  }
  return { events, comments }
}

/** What a caller reads off an answer: its text, whether it ended complete, the error it ended with, extra_fields. */
interface Reading {
  status: number
  text: string
  complete: boolean
  error: string | null
  extra: { provider: string; model: string; attempts: Array<{ provider: string; failure_class: string | null; status: number }> } | null
  keepAlives: number
}

function readStream(surface: Surface, status: number, body: string): Reading {
  const { events, comments } = parseSse(body)
  let text = ''
  let complete = false
  let error: string | null = null
  let extra: Reading['extra'] = null
  for (const { data } of events) {
    if (data === '[DONE]') continue
    const event = JSON.parse(data) as Record<string, any>
    if (event.extra_fields !== undefined) extra = event.extra_fields
    if (surface === 'chat') {
      if (event.error !== undefined) error = event.error.message
      for (const choice of event.choices ?? []) {
        if (typeof choice.delta?.content === 'string') text += choice.delta.content
        if (choice.finish_reason) complete = true
      }
    } else if (surface === 'messages') {
      if (event.type === 'error') error = event.error.message
      if (event.type === 'content_block_delta' && event.delta?.type === 'text_delta') text += event.delta.text
      if (event.type === 'message_stop') complete = true
    } else {
      if (event.type === 'error') error = event.message
      if (event.type === 'response.output_text.delta') text += event.delta
      if (event.type === 'response.completed') {
        complete = true
        // The final response's text must be the whole answer the caller read.
        const message = (event.response.output as Array<Record<string, any>>).find((item) => item.type === 'message')
        expect(message?.content?.[0]?.text).toBe(text)
      }
    }
  }
  return { status, text, complete, error, extra, keepAlives: comments }
}

function readJson(surface: Surface, status: number, body: Record<string, any>): Reading {
  const extra = body.extra_fields ?? null
  if (status !== 200) {
    const message = surface === 'messages' ? body.error?.message : body.error?.message
    return { status, text: '', complete: false, error: message ?? null, extra, keepAlives: 0 }
  }
  let text = ''
  if (surface === 'chat') text = body.choices[0].message.content
  else if (surface === 'messages') text = (body.content as Array<Record<string, any>>).filter((block) => block.type === 'text').map((block) => block.text).join('')
  else text = (body.output as Array<Record<string, any>>).filter((item) => item.type === 'message').flatMap((item) => item.content).map((part: Record<string, any>) => part.text).join('')
  return { status, text, complete: true, error: null, extra, keepAlives: 0 }
}

async function send(surface: Surface, model: string, fallbacks: string[], stream: boolean, headers: Record<string, string> = {}): Promise<Reading> {
  const { path, body } = requestOn(surface, model, fallbacks, stream)
  const response = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  })
  const text = await response.text()
  if (stream && response.headers.get('content-type')?.startsWith('text/event-stream')) return readStream(surface, response.status, text)
  return readJson(surface, response.status, JSON.parse(text) as Record<string, any>)
}

/** The simulator's whole reply for a provider and model, as an unbroken stream gives it. */
async function wholeReply(surface: Surface, model: string, stream: boolean): Promise<string> {
  const reading = await send(surface, model, [], stream)
  expect(reading.status).toBe(200)
  return reading.text
}

const PRIMARY = 'openai/gpt-4o-mini'
const CLAUDE = 'anthropic/claude-3-5-haiku-latest'

describe('a stream cut after content went out', () => {
  for (const surface of SURFACES) {
    it(`is continued on the fallback from the text sent, as one complete answer (${surface})`, async () => {
      await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: 'stream_cut' }])
      const reading = await send(surface, PRIMARY, [CLAUDE], true)
      expect(reading.status).toBe(200)
      expect(reading.error).toBeNull()
      expect(reading.complete).toBe(true)
      // The caller read the primary's first half, then the fallback's continuation from it: one answer.
      expect(reading.text).toBe(await wholeReply(surface, CLAUDE, true))
      expect(reading.extra?.provider).toBe('anthropic')
      expect(reading.extra?.attempts.map((attempt) => [attempt.provider, attempt.failure_class])).toEqual([['openai', 'transient'], ['anthropic', null]])
      const asked = (await simulator.requests()).filter((request) => request.provider === 'anthropic')
      expect(asked[0]).toMatchObject({ prefill: true })
    })
  }

  // Each way a stream breaks after content went out, on every surface: the fallback continues it.
  const BREAKS: Array<[string, Record<string, unknown>, Record<string, string>]> = [
    ['cut after 20 of 60 content events', { fault: { preset: 'stream_cut', after_chunks: 20 }, completion_tokens: 60 }, {}],
    ['stalled with the socket open', { fault: { preset: 'stream_stall', after_chunks: 2 } }, { 'x-bf-stream-idle-timeout': '1' }],
    ['a malformed event', { fault: { preset: 'stream_malformed', after_chunks: 2 } }, {}],
    ['ended without its closing events', { fault: { preset: 'stream_no_done', after_chunks: 2 } }, {}],
  ]
  for (const [what, rule, headers] of BREAKS) {
    for (const surface of SURFACES) {
      it(`${what}: continued on the fallback as one complete answer (${surface})`, async () => {
        await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', ...rule }])
        const reading = await send(surface, PRIMARY, [CLAUDE], true, headers)
        expect(reading.status).toBe(200)
        expect(reading.error).toBeNull()
        expect(reading.complete).toBe(true)
        expect(reading.extra?.provider).toBe('anthropic')
        expect(reading.extra?.attempts.map((attempt) => attempt.provider)).toEqual(['openai', 'anthropic'])
        expect(reading.extra?.attempts[0]!.failure_class).not.toBeNull()
        const asked = (await simulator.requests()).filter((request) => request.provider === 'anthropic')
        expect(asked.map((request) => request.prefill ?? false)).toEqual([true])
        // What the primary sent before it broke, then the rest from it: never the same text twice.
        if (rule.completion_tokens === undefined) expect(reading.text).toBe(await wholeReply(surface, CLAUDE, true))
        else expect(reading.text.endsWith('(anthropic/claude-3-5-haiku-latest).')).toBe(true)
      })
    }
  }

  it('whose fallback refuses the prefill ends with the real break in-band, never the fallback\'s 400', async () => {
    await simulator.setRules([
      { provider: 'openai', key: 'sk-primary-1111', fault: { preset: 'stream_cut', after_chunks: 2 } },
      { provider: 'anthropic', rejects_prefill: true },
    ])
    for (const surface of SURFACES) {
      const reading = await send(surface, PRIMARY, [CLAUDE], true)
      expect(reading.status).toBe(200)
      expect(reading.complete).toBe(false)
      expect(reading.error).toMatch(/stream broke/)
      expect(reading.error).not.toMatch(/prefill/)
      expect(reading.extra?.attempts.map((attempt) => [attempt.provider, attempt.failure_class])).toEqual([['openai', 'transient'], ['anthropic', 'caller_fault']])
    }
  })

  it('that carried a tool call is never continued: the caller gets the break', async () => {
    await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: { preset: 'stream_cut', after_chunks: 2 } }])
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: PRIMARY, stream: true, fallbacks: [CLAUDE], messages: [{ role: 'user', content: 'weather?' }], tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }], tool_choice: 'required' }),
    })
    const reading = readStream('chat', response.status, await response.text())
    expect(reading.error).toMatch(/stream broke/)
    expect((await simulator.requests()).filter((request) => request.provider === 'anthropic')).toHaveLength(0)
  })

  it('is not continued on a fallback that cannot continue from a prefill: the caller gets the break, in-band', async () => {
    await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: 'stream_cut' }])
    for (const surface of SURFACES) {
      const reading = await send(surface, PRIMARY, ['backup/gpt-4o-mini'], true)
      expect(reading.status).toBe(200)
      expect(reading.complete).toBe(false)
      expect(reading.error).toMatch(/stream broke/)
      expect(reading.extra?.attempts.map((attempt) => [attempt.provider, attempt.failure_class])).toEqual([['openai', 'transient']])
    }
  })

  it('reaches an SDK as one answer (the openai client, streamed)', async () => {
    await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: 'stream_cut' }])
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 })
    // @ts-expect-error: fallbacks is a Switchboard field
    const stream = await client.chat.completions.create({ model: PRIMARY, messages: [{ role: 'user', content: 'Say hello' }], stream: true, fallbacks: [CLAUDE] })
    let text = ''
    let finish: string | null = null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(finish).toBe('stop')
    expect(text).toContain('anthropic/')
  })
})

describe('failures before anything reached the caller, streamed and not', () => {
  const CASES: Array<[string, Record<string, unknown>, Record<string, string>, 'openai' | 'backup', boolean]> = [
    // [what, the primary's rule, headers, who serves, streamed only]
    ['500 once: the same key again', { fault: 'server_error', times: 1 }, {}, 'openai', false],
    ['503 persistent: the fallback', { fault: 'unavailable' }, {}, 'backup', false],
    ['a reset before any byte: the fallback, the primary not tried again', { fault: 'reset' }, {}, 'backup', false],
    ['no answer at all: the fallback after the deadline', { fault: 'timeout' }, { 'x-bf-request-timeout': '1', 'x-bf-first-token-timeout': '1' }, 'backup', false],
    ['a stall before any content: the fallback', { fault: { preset: 'stream_stall', after_chunks: 0 } }, { 'x-bf-stream-idle-timeout': '1' }, 'backup', true],
    ['a first token after 20 s: the fallback', { first_token_delay_ms: 20_000 }, { 'x-bf-first-token-timeout': '1' }, 'backup', true],
  ]
  for (const [what, rule, headers, served, streamedOnly] of CASES) {
    for (const surface of SURFACES) {
      for (const stream of streamedOnly ? [true] : [false, true]) {
        it(`${what} (${surface}, ${stream ? 'streamed' : 'not streamed'})`, async () => {
          await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', ...rule }])
          const reading = await send(surface, PRIMARY, ['backup/gpt-4o-mini'], stream, headers)
          expect(reading.status).toBe(200)
          expect(reading.error).toBeNull()
          expect(reading.complete).toBe(true)
          expect(reading.extra?.provider).toBe(served)
          // The answer is whole and names what served it: the fallback's own reply, model and attempt.
          expect(reading.text).toBe(await wholeReply(surface, `${served}/gpt-4o-mini`, stream))
          expect(reading.extra?.model).toBe('gpt-4o-mini')
          expect(reading.extra?.attempts.at(-1)).toMatchObject({ provider: served, failure_class: null })
        })
      }
    }
  }

  it('a context too long for the primary goes to the fallback; with none, it is the caller\'s 400 in the provider\'s words', async () => {
    for (const surface of SURFACES) {
      for (const stream of [false, true]) {
        await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: 'context_length_exceeded' }])
        const rescued = await send(surface, PRIMARY, [CLAUDE], stream)
        expect(rescued.status).toBe(200)
        expect(rescued.complete).toBe(true)
        expect(rescued.extra?.provider).toBe('anthropic')
        expect(rescued.extra?.attempts.map((attempt) => [attempt.provider, attempt.failure_class])).toEqual([['openai', 'context_length'], ['anthropic', null]])
        const alone = await send(surface, PRIMARY, [], stream)
        expect(alone.status).toBe(400)
        expect(alone.error).toContain('maximum context length')
        expect(alone.extra?.attempts.map((attempt) => attempt.failure_class)).toEqual(['context_length'])
      }
    }
    const code = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: PRIMARY, messages: [{ role: 'user', content: 'hi' }] }) })
    expect(((await code.json()) as { error: { code: string } }).error.code).toBe('context_length_exceeded')
  })

  it('a content-filter 400 is the caller\'s: answered at once with the provider\'s reason, no retry, no fallback', async () => {
    const filtered = { status: 400, body: { error: { message: 'The response was filtered due to the prompt triggering content management policy.', type: 'invalid_request_error', param: 'prompt', code: 'content_filter' } } }
    for (const surface of SURFACES) {
      for (const stream of [false, true]) {
        await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: filtered }])
        await simulator.resetRequests()
        const reading = await send(surface, PRIMARY, ['backup/gpt-4o-mini'], stream)
        expect(reading.status).toBe(400)
        expect(reading.error).toContain('content management policy')
        expect(await simulator.requests()).toHaveLength(1)
      }
    }
  })
})

describe('the first-chunk gate and the first-token deadline', () => {
  for (const surface of SURFACES) {
    it(`fails over before anything reached the caller when the primary is slow to start (${surface})`, async () => {
      await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', latency_ms: 20_000 }])
      const started = Date.now()
      const reading = await send(surface, PRIMARY, ['backup/gpt-4o-mini'], true, { 'x-bf-first-token-timeout': '1' })
      expect(reading.status).toBe(200)
      expect(reading.complete).toBe(true)
      expect(reading.error).toBeNull()
      expect(reading.extra?.provider).toBe('backup')
      expect(reading.extra?.attempts[0]).toMatchObject({ provider: 'openai', failure_class: 'timeout' })
      // Waited for the deadline, not for the 20 s start.
      expect(Date.now() - started).toBeLessThan(15_000)
      expect(reading.text).toBe(await wholeReply(surface, 'backup/gpt-4o-mini', true))
    })
  }

  it('holds a waiting caller open with keep-alive comments, then serves the stream, or ends it with the error in-band', async () => {
    await simulator.setRules([{ provider: 'openai', key: 'sk-backup-3333', latency_ms: 4_000 }])
    // The held 200 and its keep-alives are the pipeline's, the same on every surface: served once, on chat.
    const served = await send('chat', 'backup/gpt-4o-mini', [], true)
    expect(served.status).toBe(200)
    expect(served.keepAlives).toBeGreaterThanOrEqual(1)
    expect(served.complete).toBe(true)
    expect(served.error).toBeNull()
    for (const surface of SURFACES) {
      // Nothing else can serve (one key, no retry), and the request's own first-token deadline passes after its 200 went out.
      const failed = await send(surface, 'backup/gpt-4o-mini', [], true, { 'x-bf-first-token-timeout': '3.5' })
      expect(failed.status).toBe(200)
      expect(failed.keepAlives).toBeGreaterThanOrEqual(1)
      expect(failed.complete).toBe(false)
      expect(failed.error).toMatch(/did not answer in time|first-token/)
      expect(failed.extra?.attempts.map((attempt) => attempt.failure_class)).toEqual(['timeout'])
    }
  })

  it('rejects a deadline header that is not a number of seconds, naming it', async () => {
    const reading = await send('chat', PRIMARY, [], true, { 'x-bf-first-token-timeout': 'soon' })
    expect(reading.status).toBe(400)
    expect(reading.error).toMatch(/x-bf-first-token-timeout/)
  })
})

describe('retries that fit the failure', () => {
  it('waits out a short Retry-After on the only key of the named provider instead of switching provider', async () => {
    await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: { preset: 'rate_limit', retry_after_s: 1 }, times: 1 }])
    for (const surface of SURFACES) {
      for (const stream of [false, true]) {
        await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: { preset: 'rate_limit', retry_after_s: 1 }, times: 1 }])
        const reading = await send(surface, PRIMARY, ['backup/gpt-4o-mini'], stream)
        expect(reading.status).toBe(200)
        expect(reading.extra?.provider).toBe('openai')
        expect(reading.extra?.attempts.map((attempt) => [attempt.provider, attempt.failure_class])).toEqual([['openai', 'rate_limit'], ['openai', null]])
      }
    }
  })

  it('moves to the fallback after one wait when the 429 persists, never hammering the primary', async () => {
    await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: { preset: 'rate_limit', retry_after_s: 1 } }])
    const reading = await send('chat', PRIMARY, ['backup/gpt-4o-mini'], false)
    expect(reading.status).toBe(200)
    expect(reading.extra?.provider).toBe('backup')
    const onPrimary = (await simulator.requests()).filter((request) => request.provider === 'openai' && request.key_suffix === '1111')
    expect(onPrimary.length).toBe(2)
  })

  it('does not retry a connection reset on the same key when a fallback is named', async () => {
    await simulator.setRules([{ provider: 'openai', key: 'sk-primary-1111', fault: 'reset' }])
    for (const surface of SURFACES) {
      for (const stream of [false, true]) {
        await simulator.resetRequests()
        const reading = await send(surface, PRIMARY, ['backup/gpt-4o-mini'], stream)
        expect(reading.status).toBe(200)
        expect(reading.extra?.provider).toBe('backup')
        const onPrimary = (await simulator.requests()).filter((request) => request.provider === 'openai' && request.key_suffix === '1111')
        expect(onPrimary).toHaveLength(1)
      }
    }
  })
})
