import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, type Simulator } from '../index.ts'
import { call, control } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator({ seed: 42 }) })
afterAll(() => simulator.close())
beforeEach(() => { simulator.clearRules(); simulator.resetRequests() })

async function statuses(sim: Simulator, count: number): Promise<number[]> {
  const result: number[] = []
  for (let index = 0; index < count; index += 1) result.push((await call(sim, 'openai')).status)
  return result
}

describe('rule matching', () => {
  it('a rule with times applies to that many requests, then is spent', async () => {
    simulator.setRules([{ fault: 'server_error', times: 2 }])
    expect(await statuses(simulator, 3)).toEqual([500, 500, 200])
    expect((await control(simulator, 'GET', '/_sim/rules')).json).toEqual([{ fault: 'server_error', times: 2, remaining: 0 }])
  })

  it('matches on provider, key and model; later rules override earlier fields', async () => {
    simulator.setRules([
      { completion_tokens: 5 },
      { provider: 'openai', key: 'sk-bad-0001', fault: 'invalid_api_key' },
      { model: 'gpt-big', completion_tokens: 50 },
    ])
    expect((await call(simulator, 'openai', { key: 'sk-bad-0001' })).status).toBe(401)
    expect((await call(simulator, 'anthropic', { key: 'sk-bad-0001' })).json.usage.output_tokens).toBe(5)
    expect((await call(simulator, 'openai', { model: 'gpt-big' })).json.usage.completion_tokens).toBe(50)
    expect((await call(simulator, 'azure', { model: 'gpt-big' })).json.usage.completion_tokens).toBe(50)
  })

  it('error_rate 0 never fails, 1 always fails with the given error', async () => {
    simulator.setRules([{ error_rate: 0 }])
    expect(await statuses(simulator, 5)).toEqual([200, 200, 200, 200, 200])
    simulator.setRules([{ error_rate: 1, error: 'bad_gateway' }])
    expect(await statuses(simulator, 3)).toEqual([502, 502, 502])
  })

  it('error_rate draws from the seeded source: same seed, same failures', async () => {
    const first = await createSimulator({ seed: 7, rules: [{ error_rate: 0.5 }] })
    const second = await createSimulator({ seed: 7, rules: [{ error_rate: 0.5 }] })
    try {
      const a = await statuses(first, 40)
      const b = await statuses(second, 40)
      expect(a).toEqual(b)
      expect(a).toContain(500)
      expect(a).toContain(200)
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })
})

describe('rate limits', () => {
  it('rpm counts per key per minute and answers OpenAI 429 past it', async () => {
    simulator.setRules([{ rpm: 3 }])
    const replies = []
    for (let index = 0; index < 4; index += 1) replies.push(await call(simulator, 'openai', { key: 'sk-rpm-aaaa' }))
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 429])
    expect(replies.slice(0, 3).map((reply) => reply.headers.get('x-ratelimit-remaining-requests'))).toEqual(['2', '1', '0'])
    expect(replies[0]?.headers.get('x-ratelimit-limit-requests')).toBe('3')
    const refused = replies[3]!
    expect(refused.json.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' })
    expect(refused.json.error.message).toContain('requests per min (RPM): Limit 3, Used 3, Requested 1')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(refused.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?s$/)
    expect(simulator.requests().at(-1)).toMatchObject({ status: 429, fault: 'rate_limit' })
    expect((await call(simulator, 'openai', { key: 'sk-rpm-bbbb' })).status).toBe(200)
  })

  it('tpm counts prompt plus completion tokens and answers each provider 429', async () => {
    simulator.setRules([{ tpm: 100, completion_tokens: 40 }])
    for (const provider of ['openai', 'azure', 'anthropic'] as const) {
      const first = await call(simulator, provider, { key: `key-${provider}` })
      const second = await call(simulator, provider, { key: `key-${provider}` })
      const third = await call(simulator, provider, { key: `key-${provider}` })
      expect([first.status, second.status, third.status]).toEqual([200, 200, 429])
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0)
      if (provider === 'openai') expect(third.json.error.type).toBe('tokens')
      if (provider === 'azure') {
        expect(third.json.error.code).toBe('429')
        expect(third.json.error.message).toContain('exceeded token rate limit')
        expect(Number(third.headers.get('retry-after-ms'))).toBeGreaterThan(0)
      }
      if (provider === 'anthropic') {
        expect(third.json.error.type).toBe('rate_limit_error')
        expect(third.headers.get('anthropic-ratelimit-tokens-limit')).toBe('100')
      }
    }
  })

  it('replacing the rules starts a fresh window', async () => {
    simulator.setRules([{ rpm: 1 }])
    expect(await statuses(simulator, 2)).toEqual([200, 429])
    simulator.setRules([{ rpm: 1 }])
    expect(await statuses(simulator, 1)).toEqual([200])
  })
})
