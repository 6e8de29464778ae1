import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, type Simulator } from '../index.ts'
import { eventKind } from '../stream/script.ts'
import { control, eventually, parseSse } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())
beforeEach(() => {
  simulator.clearRules()
  simulator.resetRequests()
})

type Dialect = 'openai' | 'azure' | 'anthropic' | 'responses'
const DIALECTS: Dialect[] = ['openai', 'azure', 'anthropic', 'responses']

/** A streamed request in a dialect, unread. */
function open(dialect: Dialect, body: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  let path = '/v1/chat/completions'
  const request: Record<string, unknown> = { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'Hello there, simulator.' }] }
  if (dialect === 'openai') headers.authorization = 'Bearer sk-stream-1111'
  if (dialect === 'azure') {
    headers['api-key'] = 'az-stream-1111'
    path = '/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21'
    delete request.model
  }
  if (dialect === 'anthropic') {
    headers['x-api-key'] = 'sk-ant-stream-1111'
    headers['anthropic-version'] = '2023-06-01'
    path = '/v1/messages'
    request.model = 'claude-sonnet-4-5'
    request.max_tokens = 1024
  }
  if (dialect === 'responses') {
    headers.authorization = 'Bearer sk-stream-1111'
    path = '/v1/responses'
    delete request.messages
    request.input = 'Hello there, simulator.'
  }
  return fetch(simulator.url + path, { method: 'POST', headers, body: JSON.stringify({ ...request, ...body }), signal })
}

/** Reads a stream to its end: the SSE events, whether the connection broke, and when each piece arrived. */
async function drain(response: Response, started: number): Promise<{ events: string[]; broke: boolean; arrivals: Array<{ at: number; text: string }> }> {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const arrivals: Array<{ at: number; text: string }> = []
  let broke = false
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      arrivals.push({ at: Date.now() - started, text: decoder.decode(value, { stream: true }) })
    }
  } catch {
    broke = true
  }
  const text = arrivals.map((arrival) => arrival.text).join('')
  // Each event as it went on the wire, for eventKind.
  const events = text.split('\n\n').filter((block) => block.trim() !== '').map((block) => `${block}\n\n`)
  return { events, broke, arrivals }
}

const contentOf = (events: string[]) => events.filter((event) => eventKind(event) === 'content')
const endingOf = (events: string[]) => events.filter((event) => eventKind(event) === 'ending')

describe('stream faults, in every streaming dialect', () => {
  for (const dialect of DIALECTS) {
    it(`first_token_delay_ms sends headers and preamble at once, the first content after the delay (${dialect})`, async () => {
      simulator.setRules([{ first_token_delay_ms: 400 }])
      const started = Date.now()
      const response = await open(dialect)
      const headersAt = Date.now() - started
      const read = await drain(response, started)
      const firstContent = read.arrivals.find((arrival) => contentOf(arrival.text.split('\n\n').map((block) => `${block}\n\n`)).length > 0)!
      expect(firstContent.at).toBeGreaterThanOrEqual(390)
      expect(headersAt).toBeLessThan(firstContent.at)
      // The preamble came before the delay, on its own.
      expect(contentOf(read.arrivals[0]!.text.split('\n\n').map((block) => `${block}\n\n`))).toHaveLength(0)
      expect(endingOf(read.events).length).toBeGreaterThan(0)
      expect(read.broke).toBe(false)
    })

    it(`stream_cut with after_chunks sends exactly that many content events, then drops the connection (${dialect})`, async () => {
      simulator.setRules([{ fault: { preset: 'stream_cut', after_chunks: 7 }, completion_tokens: 60 }])
      const read = await drain(await open(dialect), Date.now())
      expect(read.broke).toBe(true)
      expect(contentOf(read.events)).toHaveLength(7)
      expect(endingOf(read.events)).toHaveLength(0)
      const records = await eventually(() => simulator.requests(), (list) => list.length === 1)
      expect(records[0]).toMatchObject({ fault: 'stream_cut', aborted: false })
    })

    it(`stream_stall sends its content events, then nothing with the socket open, then drops it after after_ms (${dialect})`, async () => {
      simulator.setRules([{ fault: { preset: 'stream_stall', after_chunks: 3, after_ms: 700 } }])
      const started = Date.now()
      const read = await drain(await open(dialect), started)
      expect(contentOf(read.events)).toHaveLength(3)
      expect(endingOf(read.events)).toHaveLength(0)
      expect(read.broke).toBe(true)
      // The stall: the last bytes came before it, the break at least after_ms later.
      expect(Date.now() - started - read.arrivals.at(-1)!.at).toBeGreaterThanOrEqual(600)
    })

    it(`stream_malformed sends one event whose data is cut mid-JSON, then the rest of the stream (${dialect})`, async () => {
      simulator.setRules([{ fault: { preset: 'stream_malformed', after_chunks: 2 } }])
      const read = await drain(await open(dialect), Date.now())
      expect(read.broke).toBe(false)
      const unreadable = parseSse(read.events.join('')).filter((event) => {
        try {
          JSON.parse(event.data)
          return false
        } catch {
          return event.data !== '[DONE]'
        }
      })
      expect(unreadable).toHaveLength(1)
      expect(endingOf(read.events).length).toBeGreaterThan(0)
    })

    it(`stream_no_done ends the connection cleanly without the closing events (${dialect})`, async () => {
      simulator.setRules([{ fault: 'stream_no_done' }])
      const read = await drain(await open(dialect), Date.now())
      expect(read.broke).toBe(false)
      expect(contentOf(read.events).length).toBeGreaterThan(1)
      expect(endingOf(read.events)).toHaveLength(0)
      const text = read.events.join('')
      for (const closing of ['[DONE]', 'message_stop', 'response.completed', 'finish_reason":"']) expect(text).not.toContain(closing)
    })
  }

  it('a client that leaves a stalled stream frees it: in_flight goes back to 0', async () => {
    simulator.setRules([{ fault: 'stream_stall' }])
    const abort = new AbortController()
    const response = await open('openai', {}, abort.signal)
    await response.body!.getReader().read()
    expect((await control(simulator, 'GET', '/_sim/stats')).json.in_flight).toBe(1)
    abort.abort()
    await eventually(async () => (await control(simulator, 'GET', '/_sim/stats')).json.in_flight, (count) => count === 0)
  })

  it('a plain request: stream_stall holds it, stream_no_done ends it early but cleanly, stream_malformed sends truncated JSON', async () => {
    simulator.setRules([{ fault: 'stream_no_done' }])
    const early = await fetch(`${simulator.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-1' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) })
    const text = await early.text()
    expect(() => JSON.parse(text)).toThrow()
    simulator.setRules([{ fault: 'stream_malformed' }])
    const truncated = await fetch(`${simulator.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-1' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) })
    expect(truncated.status).toBe(200)
    const body = await truncated.text()
    expect(body.startsWith('{')).toBe(true)
    expect(() => JSON.parse(body)).toThrow()
    simulator.setRules([{ fault: { preset: 'stream_stall', after_ms: 300 } }])
    await expect(fetch(`${simulator.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-1' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) })).rejects.toThrow()
  })
})

describe('prefills', () => {
  const continuation = (provider: 'openai' | 'anthropic', body: Record<string, unknown>) => fetch(`${simulator.url}${provider === 'anthropic' ? '/v1/messages' : '/v1/chat/completions'}`, {
    method: 'POST',
    headers: provider === 'anthropic' ? { 'content-type': 'application/json', 'x-api-key': 'sk-ant-1', 'anthropic-version': '2023-06-01' } : { 'content-type': 'application/json', authorization: 'Bearer sk-1' },
    body: JSON.stringify(body),
  })

  it('answers a conversation that ends with the assistant\'s text with the rest of the reply, and records that it was a continuation', async () => {
    const answer = await continuation('anthropic', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello from the simulator' }] })
    expect(answer.status).toBe(200)
    expect((await answer.json()).content[0].text).toBe(' (anthropic/claude-sonnet-4-5).')
    const records = await eventually(() => simulator.requests().filter((record) => record.key === 'sk-ant-1'), (list) => list.length === 1)
    expect(records[0]!.prefill).toBe(true)
  })

  it('rejects_prefill refuses it with the provider\'s 400, and serves a conversation that ends with the user', async () => {
    simulator.setRules([{ rejects_prefill: true }])
    const refused = await continuation('anthropic', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello' }] })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('does not support assistant message prefill') } })
    const openai = await continuation('openai', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello' }] })
    expect(openai.status).toBe(400)
    expect((await openai.json()).error.message).toContain('prefill')
    const served = await continuation('anthropic', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
    expect(served.status).toBe(200)
    const records = await eventually(() => simulator.requests().filter((record) => record.key === 'sk-ant-1' || record.key === 'sk-1'), (list) => list.length === 3)
    expect(records.map((record) => record.fault ?? null)).toEqual(['rejects_prefill', 'rejects_prefill', null])
  })

  it('checks the new rule fields and preset options, naming the field', () => {
    expect(() => simulator.setRules([{ first_token_delay_ms: -1 }])).toThrow(/first_token_delay_ms/)
    expect(() => simulator.setRules([{ rejects_prefill: 'yes' as never }])).toThrow(/rejects_prefill/)
    expect(() => simulator.setRules([{ fault: { preset: 'stream_cut', after_chunks: 1.5 } }])).toThrow(/after_chunks/)
  })
})

describe('beta flags', () => {
  const messages = (beta: string | undefined) => fetch(`${simulator.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-beta-1', 'anthropic-version': '2023-06-01', ...(beta === undefined ? {} : { 'anthropic-beta': beta }) },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
  })

  it('refuses_betas answers Anthropic\'s 400 naming every refused flag the header carries, and serves a header without them (issue 37)', async () => {
    simulator.setRules([{ provider: 'anthropic', refuses_betas: ['effort-2025-11-24', 'web-search-2025-03-05'] }])
    const refused = await messages('claude-code-20250219, effort-2025-11-24,web-search-2025-03-05')
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'Unexpected value(s) `effort-2025-11-24`, `web-search-2025-03-05` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.' } })
    expect((await messages('claude-code-20250219')).status).toBe(200)
    expect((await messages(undefined)).status).toBe(200)
    const records = await eventually(() => simulator.requests().filter((record) => record.key === 'sk-ant-beta-1'), (list) => list.length === 3)
    expect(records.map((record) => record.fault ?? null)).toEqual(['refuses_betas', null, null])
    expect(() => simulator.setRules([{ refuses_betas: 'effort' as never }])).toThrow(/refuses_betas/)
  })
})
