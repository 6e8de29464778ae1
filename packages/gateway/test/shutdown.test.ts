/** Graceful shutdown (issue 7): SIGTERM drains in-flight requests, turns /health to 503, and exits 0. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

beforeAll(async () => {
  simulator = await startSimulator()
  gateway = await startGateway({ providers: { openai: { keys: [{ name: 'k', value: 'sk-shutdown-test-1111', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } } } })
})

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

describe('SIGTERM', () => {
  it('finishes the requests in flight, says draining, then exits 0', async () => {
    await simulator.setRules([{ provider: 'openai', latency_ms: 1500 }])
    const inFlight = fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    })
    await expect.poll(() => simulator.inFlight(), { timeout: 5000 }).toBe(1)
    const exit = gateway.kill('SIGTERM')
    const answer = await inFlight
    expect(answer.status).toBe(200)
    expect(((await answer.json()) as { choices: unknown[] }).choices).toHaveLength(1)
    expect(await exit).toBe(0)
    await expect(fetch(`${gateway.url}/health`)).rejects.toThrow()
  })
})
