import OpenAI from 'openai'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, type Simulator } from '../index.ts'
import { call, parseSse, type WireBody } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())
beforeEach(() => { simulator.clearRules(); simulator.resetRequests() })

const weatherTool = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } },
}

describe('OpenAI chat completions', () => {
  it('answers a chat.completion with usage and OpenAI rate headers', async () => {
    const reply = await call(simulator, 'openai')
    expect(reply.status).toBe(200)
    const body = reply.json
    expect(body.id).toMatch(/^chatcmpl-/)
    expect(body.object).toBe('chat.completion')
    expect(body.model).toBe('gpt-4o')
    expect(body.choices[0].message).toMatchObject({ role: 'assistant', content: 'Hello from the simulator (openai/gpt-4o).' })
    expect(body.choices[0].finish_reason).toBe('stop')
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens)
    expect(reply.headers.get('x-request-id')).toMatch(/^req_/)
    for (const name of ['limit-requests', 'remaining-requests', 'limit-tokens', 'remaining-tokens']) {
      expect(reply.headers.get(`x-ratelimit-${name}`)).toMatch(/^\d+$/)
    }
    expect(reply.headers.get('x-ratelimit-reset-requests')).toMatch(/^[\dhms.]+$/)
  })

  it('streams role, content pieces, finish_reason, a usage chunk and [DONE]', async () => {
    const reply = await call(simulator, 'openai', { body: { stream: true, stream_options: { include_usage: true } } })
    expect(reply.headers.get('content-type')).toContain('text/event-stream')
    const events = parseSse(reply.text)
    expect(events.at(-1)?.data).toBe('[DONE]')
    const chunks: WireBody[] = events.slice(0, -1).map((event) => JSON.parse(event.data))
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true)
    expect(chunks[0].choices[0].delta.role).toBe('assistant')
    const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')
    expect(text).toBe('Hello from the simulator (openai/gpt-4o).')
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta?.content).length).toBeGreaterThan(1)
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop')
    expect(chunks.at(-1).choices).toEqual([])
    expect(chunks.at(-1).usage.completion_tokens).toBeGreaterThan(0)
  })

  it('returns a forced tool call with finish_reason tool_calls', async () => {
    const reply = await call(simulator, 'openai', {
      body: { tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } } },
    })
    const choice = reply.json.choices[0]
    expect(choice.finish_reason).toBe('tool_calls')
    expect(choice.message.content).toBeNull()
    expect(choice.message.tool_calls[0].function.name).toBe('get_weather')
    expect(JSON.parse(choice.message.tool_calls[0].function.arguments)).toEqual({ city: 'simulated', days: 1 })
  })

  it('answers text when tool_choice is auto', async () => {
    const reply = await call(simulator, 'openai', { body: { tools: [weatherTool], tool_choice: 'auto' } })
    expect(reply.json.choices[0].finish_reason).toBe('stop')
  })

  it('sizes the reply by completion_tokens and cuts it at max_tokens', async () => {
    simulator.setRules([{ completion_tokens: 300 }])
    const sized = await call(simulator, 'openai')
    expect(sized.json.usage.completion_tokens).toBe(300)
    expect(sized.json.choices[0].message.content.length).toBe(1200)
    const cut = await call(simulator, 'openai', { body: { max_tokens: 10 } })
    expect(cut.json.choices[0].finish_reason).toBe('length')
    expect(cut.json.usage.completion_tokens).toBe(10)
  })

  it("refuses a request without a key, with invalid JSON, or without messages in OpenAI's shape", async () => {
    const noKey = await call(simulator, 'openai', { key: null })
    expect(noKey.status).toBe(401)
    expect(noKey.json.error.message).toContain("You didn't provide an API key")
    const badJson = await call(simulator, 'openai', { rawBody: '{"model":' })
    expect(badJson.status).toBe(400)
    expect(badJson.json.error).toMatchObject({ type: 'invalid_request_error', code: null })
    const noMessages = await call(simulator, 'openai', { rawBody: '{"model":"gpt-4o"}' })
    expect(noMessages.status).toBe(400)
    expect(noMessages.json.error.param).toBe('messages')
  })

  it('answers 404 for unknown paths', async () => {
    const response = await fetch(`${simulator.url}/v1/images/generations`, { method: 'POST', body: '{}' })
    expect(response.status).toBe(404)
    expect(((await response.json()) as WireBody).error.message).toBe('Invalid URL (POST /v1/images/generations)')
  })

  it('is read correctly by the official OpenAI SDK, streaming and not', async () => {
    const client = new OpenAI({ apiKey: 'sk-sdk-0000', baseURL: `${simulator.url}/v1`, maxRetries: 0 })
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    expect(completion.choices[0]?.message.content).toBe('Hello from the simulator (openai/gpt-4o-mini).')
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('Hello from the simulator (openai/gpt-4o-mini).')
    simulator.setRules([{ fault: { preset: 'rate_limit', retry_after_s: 7 } }])
    const error = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('rate_limit_exceeded')
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('7')
  })
})
