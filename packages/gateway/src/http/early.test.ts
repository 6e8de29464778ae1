import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ReadinessState, startingError } from '../boot/readiness.ts'
import { startingReport } from '../directory/health.ts'
import { createEarlyListener } from './early.ts'

const readiness = new ReadinessState()
const early = createEarlyListener(() => startingReport(readiness), () => startingError(readiness.get()))
let server: Server
let url: string
beforeAll(async () => {
  server = createServer(early.listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const post = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"model":"gpt-4o"}' })

describe('the listener of a booting node', () => {
  it('says starting on /health (503) and alive on /health/live (200)', async () => {
    const health = await fetch(`${url}/health`)
    expect(health.status).toBe(503)
    expect(await health.json()).toMatchObject({ status: 'starting', reasons: expect.arrayContaining([expect.stringContaining('starting')]), database: { status: 'unknown' }, gateway_keys: { from: null } })
    const live = await fetch(`${url}/health/live`)
    expect(live.status).toBe(200)
    expect(await live.json()).toEqual({ status: 'alive' })
  })

  it('answers inference 503 gateway_starting with retry-after, in OpenAI\'s shape or Anthropic\'s on /v1/messages', async () => {
    for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/embeddings']) {
      const answer = await post(path)
      expect(answer.status).toBe(503)
      expect(answer.headers.get('retry-after')).toBe('5')
      expect(answer.headers.get('x-request-id')).toEqual(expect.any(String))
      expect(await answer.json()).toMatchObject({ error: { code: 'gateway_starting', type: 'server_error' }, extra_fields: { provider: null, attempts: [] } })
    }
    const messages = await post('/v1/messages', { 'anthropic-version': '2023-06-01' })
    expect(messages.status).toBe(503)
    expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'gateway_starting' } })
    expect((await fetch(`${url}/api/providers`)).status).toBe(503)
  })

  it('hands every request to the full listener once the node is wired', async () => {
    early.switchTo((_incoming, outgoing) => outgoing.writeHead(204).end())
    expect((await fetch(`${url}/health`)).status).toBe(204)
  })
})
