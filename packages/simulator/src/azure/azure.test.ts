import { AzureOpenAI } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSimulator, type Simulator } from '../index.ts'
import { call, parseSse, type WireBody } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())

describe('Azure OpenAI chat completions', () => {
  it('answers with the deployment as model, content filter results and Azure headers', async () => {
    const reply = await call(simulator, 'azure', { model: 'prod-gpt4o' })
    expect(reply.status).toBe(200)
    expect(reply.json.model).toBe('prod-gpt4o')
    expect(reply.json.choices[0].message.content).toBe('Hello from the simulator (azure/prod-gpt4o).')
    expect(reply.json.prompt_filter_results[0].prompt_index).toBe(0)
    expect(reply.json.choices[0].content_filter_results.hate.filtered).toBe(false)
    expect(reply.headers.get('apim-request-id')).toMatch(/^req_/)
    expect(reply.headers.get('x-ratelimit-remaining-requests')).toMatch(/^\d+$/)
    expect(reply.headers.get('x-ratelimit-remaining-tokens')).toMatch(/^\d+$/)
  })

  it('streams a prompt-filter chunk first, then OpenAI chunks and [DONE]', async () => {
    const reply = await call(simulator, 'azure', { model: 'dep', body: { stream: true } })
    const events = parseSse(reply.text)
    expect(events.at(-1)?.data).toBe('[DONE]')
    const chunks: WireBody[] = events.slice(0, -1).map((event) => JSON.parse(event.data))
    expect(chunks[0].choices).toEqual([])
    expect(chunks[0].prompt_filter_results).toHaveLength(1)
    const text = chunks.slice(1).map((chunk) => chunk.choices[0].delta.content ?? '').join('')
    expect(text).toBe('Hello from the simulator (azure/dep).')
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop')
  })

  it("answers 404 Resource not found without api-version, and 401 in Azure's shape without a key", async () => {
    const noVersion = await call(simulator, 'azure', { apiVersion: null })
    expect(noVersion.status).toBe(404)
    expect(noVersion.json).toEqual({ error: { code: '404', message: 'Resource not found' } })
    const noKey = await call(simulator, 'azure', { key: null })
    expect(noKey.status).toBe(401)
    expect(noKey.json.error.code).toBe('401')
    expect(noKey.json.error.message).toMatch(/^Access denied due to invalid subscription key or wrong API endpoint/)
  })

  it('is read correctly by the official AzureOpenAI client', async () => {
    const client = new AzureOpenAI({
      apiKey: 'azure-key-5678', endpoint: simulator.url, apiVersion: '2024-10-21', deployment: 'eu-gpt4o', maxRetries: 0,
    })
    const completion = await client.chat.completions.create({ model: 'ignored', messages: [{ role: 'user', content: 'hi' }] })
    expect(completion.model).toBe('eu-gpt4o')
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'azure', key: 'azure-key-5678', key_suffix: '5678', model: 'eu-gpt4o' })
  })
})
