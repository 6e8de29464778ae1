import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSimulator, type Simulator } from '../index.ts'
import { call, parseSse } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())

const tools = [{ name: 'lookup', input_schema: { type: 'object', properties: { query: { type: 'string' } } } }]

describe('Anthropic messages', () => {
  it('answers a message with text content, usage and Anthropic headers', async () => {
    const reply = await call(simulator, 'anthropic')
    expect(reply.status).toBe(200)
    expect(reply.json).toMatchObject({
      type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', stop_reason: 'end_turn', stop_sequence: null,
      content: [{ type: 'text', text: 'Hello from the simulator (anthropic/claude-sonnet-4-5).' }],
    })
    expect(reply.json.id).toMatch(/^msg_/)
    expect(reply.json.usage.input_tokens).toBeGreaterThan(0)
    expect(reply.json.usage.output_tokens).toBeGreaterThan(0)
    expect(reply.headers.get('request-id')).toMatch(/^req_/)
    expect(reply.headers.get('anthropic-ratelimit-requests-limit')).toMatch(/^\d+$/)
    expect(reply.headers.get('anthropic-ratelimit-tokens-remaining')).toMatch(/^\d+$/)
    expect(reply.headers.get('anthropic-ratelimit-requests-reset')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  })

  it('streams the real event sequence', async () => {
    const reply = await call(simulator, 'anthropic', { body: { stream: true } })
    const events = parseSse(reply.text)
    const names = events.map((event) => event.event)
    expect(names[0]).toBe('message_start')
    expect(names.slice(1, 3)).toEqual(['content_block_start', 'ping'])
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop'])
    const deltas = events.filter((event) => event.event === 'content_block_delta').map((event) => JSON.parse(event.data))
    expect(deltas.length).toBeGreaterThan(1)
    expect(deltas.map((delta) => delta.delta.text).join('')).toBe('Hello from the simulator (anthropic/claude-sonnet-4-5).')
    for (const event of events) expect(JSON.parse(event.data).type).toBe(event.event)
    const final = JSON.parse(events.at(-2)?.data ?? '{}')
    expect(final.delta.stop_reason).toBe('end_turn')
    expect(final.usage.output_tokens).toBeGreaterThan(0)
  })

  it('answers a tool_use block when tool_choice forces a tool, streaming and not', async () => {
    const reply = await call(simulator, 'anthropic', { body: { tools, tool_choice: { type: 'any' } } })
    expect(reply.json.stop_reason).toBe('tool_use')
    expect(reply.json.content[0]).toMatchObject({ type: 'tool_use', name: 'lookup', input: { query: 'simulated' } })
    const streamed = await call(simulator, 'anthropic', { body: { tools, tool_choice: { type: 'tool', name: 'lookup' }, stream: true } })
    const events = parseSse(streamed.text).map((event) => JSON.parse(event.data))
    expect(events[1].content_block.type).toBe('tool_use')
    const json = events.filter((event) => event.type === 'content_block_delta').map((event) => event.delta.partial_json).join('')
    expect(JSON.parse(json)).toEqual({ query: 'simulated' })
    expect(events.at(-2).delta.stop_reason).toBe('tool_use')
  })

  it('requires anthropic-version, x-api-key and max_tokens like the real API', async () => {
    const noVersion = await call(simulator, 'anthropic', { headers: { 'anthropic-version': '' } })
    expect(noVersion.status).toBe(400)
    expect(noVersion.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' } })
    const noKey = await call(simulator, 'anthropic', { key: null })
    expect(noKey.status).toBe(401)
    expect(noKey.json.error.type).toBe('authentication_error')
    const noMax = await call(simulator, 'anthropic', { rawBody: JSON.stringify({ model: 'claude', messages: [] }) })
    expect(noMax.status).toBe(400)
    expect(noMax.json.error).toEqual({ type: 'invalid_request_error', message: 'max_tokens: Field required' })
    expect(noMax.json.request_id).toMatch(/^req_/)
    const badJson = await call(simulator, 'anthropic', { rawBody: 'nope' })
    expect(badJson.status).toBe(400)
    expect(badJson.json.type).toBe('error')
  })
})
