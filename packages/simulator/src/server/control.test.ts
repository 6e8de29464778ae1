import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, RuleError, type Simulator } from '../index.ts'
import { call, control } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())
beforeEach(() => { simulator.clearRules(); simulator.resetRequests() })

describe('control API', () => {
  it('reports health', async () => {
    expect(await control(simulator, 'GET', '/_sim/health')).toEqual({ status: 200, json: { status: 'ok' } })
  })

  it('replaces, appends, lists and clears rules', async () => {
    expect((await control(simulator, 'PUT', '/_sim/rules', [{ provider: 'openai', fault: 'overloaded' }])).status).toBe(200)
    expect((await control(simulator, 'POST', '/_sim/rules', { key: 'k', latency_ms: { p50: 10, p99: 40 } })).status).toBe(201)
    expect((await control(simulator, 'GET', '/_sim/rules')).json).toEqual([
      { provider: 'openai', fault: 'overloaded' },
      { key: 'k', latency_ms: { p50: 10, p99: 40 } },
    ])
    expect((await call(simulator, 'openai')).status).toBe(503)
    await control(simulator, 'DELETE', '/_sim/rules')
    expect((await control(simulator, 'GET', '/_sim/rules')).json).toEqual([])
    expect((await control(simulator, 'PUT', '/_sim/rules', { rules: [{ times: 1, fault: 'reset' }] })).json).toHaveLength(1)
  })

  it.each([
    [[{ fault: 'melted' }], 'rules[0].fault: unknown preset "melted"'],
    [[{ error_rate: 2 }], 'rules[0].error_rate must be between 0 and 1'],
    [[{ provider: 'cohere' }], 'rules[0].provider must be one of openai, azure, anthropic'],
    [[{ colour: 'red' }], 'rules[0]: unknown field "colour"'],
    [[{}, { times: 0 }], 'rules[1].times must be a positive integer'],
    [[{ latency_ms: { p50: 50, p99: 10 } }], 'rules[0].latency_ms.p99 must be at least rules[0].latency_ms.p50'],
    [[{ fault: { status: 700, body: {} } }], 'rules[0].fault.status must be an integer HTTP status (200..599)'],
    // A preset's options name a preset; they do not nest another spec.
    [[{ fault: { preset: { preset: 'reset' } } }], 'rules[0].fault.preset must be a preset name'],
    [{ not: 'a list' }, 'rules must be an array'],
  ])('refuses %j with a clear message', async (body, message) => {
    const answer = await control(simulator, 'PUT', '/_sim/rules', body)
    expect(answer.status).toBe(400)
    expect(answer.json.error.message).toContain(message)
  })

  it('refuses bad JSON and bad single rules, and keeps the old rules', async () => {
    simulator.setRules([{ completion_tokens: 3 }])
    expect((await control(simulator, 'PUT', '/_sim/rules', '[{')).status).toBe(400)
    const bad = await control(simulator, 'POST', '/_sim/rules', { chunk_delay_ms: -1 })
    expect(bad).toEqual({ status: 400, json: { error: { message: 'rule.chunk_delay_ms must be a non-negative number' } } })
    expect((await control(simulator, 'GET', '/_sim/rules')).json).toEqual([{ completion_tokens: 3 }])
  })

  it('throws RuleError from the in-process API', () => {
    expect(() => simulator.addRule({ rpm: 1.5 })).toThrow(RuleError)
    expect(() => simulator.setRules([{ fault: { preset: 'nope' as 'reset' } }])).toThrow(/unknown preset/)
  })

  it('lists requests with only a key suffix, counts stats, and clears', async () => {
    await call(simulator, 'openai', { key: 'sk-secret-value-9876' })
    simulator.setRules([{ fault: 'server_error' }])
    await call(simulator, 'anthropic', { key: 'sk-ant-other-5555', model: 'claude-x' })
    const listed = await fetch(`${simulator.url}/_sim/requests`).then((response) => response.text())
    expect(listed).not.toContain('secret')
    expect(JSON.parse(listed)).toEqual([
      expect.objectContaining({ provider: 'openai', key_suffix: '9876', model: 'gpt-4o', stream: false, status: 200, aborted: false }),
      expect.objectContaining({ provider: 'anthropic', key_suffix: '5555', model: 'claude-x', status: 500, fault: 'server_error' }),
    ])
    expect(JSON.parse(listed)[0]).not.toHaveProperty('key')
    expect(simulator.requests()[0]?.key).toBe('sk-secret-value-9876')
    const stats = (await control(simulator, 'GET', '/_sim/stats')).json
    expect(stats).toMatchObject({ total: 2, aborted: 0, in_flight: 0 })
    expect(stats.rows).toContainEqual({ provider: 'anthropic', key_suffix: '5555', model: 'claude-x', status: 500, count: 1 })
    expect((await control(simulator, 'DELETE', '/_sim/requests')).status).toBe(200)
    expect((await control(simulator, 'GET', '/_sim/requests')).json).toEqual([])
  })

  it('answers 404 for unknown control routes and 405 for wrong methods', async () => {
    expect((await control(simulator, 'GET', '/_sim/nothing')).status).toBe(404)
    expect((await control(simulator, 'PATCH', '/_sim/rules')).status).toBe(405)
  })
})
