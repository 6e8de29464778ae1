/**
 * Hostile HTTP input (issue 18, item 4): fast-check throws generated bodies, headers and query
 * strings at every route of a real gateway process, inference and admin. Whatever comes in,
 * the answer is never a 5xx, the process stays up, no hold appears, and memory stays bounded.
 * Bounded: a fixed number of runs per group, with a fixed seed so a failure replays.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

beforeAll(async () => {
  simulator = await startSimulator()
  gateway = await startGateway({
    providers: {
      openai: { keys: [{ name: 'k', value: 'sk-fuzz-http-1111', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } },
      anthropic: { keys: [{ name: 'a', value: 'sk-ant-fuzz-2222', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } },
    },
  })
}, 90_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

const INFERENCE = ['/v1/chat/completions', '/v1/messages', '/v1/messages/count_tokens', '/v1/responses', '/v1/embeddings']
const ADMIN_GET = ['/health', '/metrics', '/v1/models', '/api/providers', '/api/providers/%s', '/api/adaptive-routing/config', '/api/load-balancer-config', '/api/adaptive-routing/routes', '/api/adaptive-routing/conditions', '/api/cluster', '/api/adaptive-routing/history/issues', '/api/adaptive-routing/history/issues/%s', '/api/logs', '/api/logs/%s', '/']
const ADMIN_WRITE: [string, string][] = [
  ['POST', '/api/providers'],
  ['PUT', '/api/providers/%s'],
  ['DELETE', '/api/providers/%s'],
  ['PUT', '/api/adaptive-routing/config'],
  ['PUT', '/api/load-balancer-config'],
  ['POST', '/api/adaptive-routing/conditions/clear'],
]

/** Path parameters: anything but the configured providers' names (a valid DELETE would really delete). */
const parameter = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('..', '%00', '%2e%2e%2f', 'x'.repeat(5000), 'null', '-1', '😀')).filter((value) => value !== 'openai' && value !== 'anthropic')
const query = fc.oneof(
  fc.constant(''),
  fc.dictionary(fc.constantFrom('limit', 'offset', 'from', 'to', 'providers', 'status', 'sort', 'search', 'nodes', 'session_id', fc.sample(fc.string(), 1)[0] ?? 'q'), fc.oneof(fc.string({ maxLength: 30 }), fc.integer().map(String), fc.constantFrom('-1', '1e308', 'NaN', '', '9'.repeat(400)))).map((entries) => `?${new URLSearchParams(entries).toString()}`),
  fc.string({ maxLength: 200 }).map((text) => `?${encodeURIComponent(text)}`),
)
const chatish = fc.record(
  {
    model: fc.oneof(fc.constantFrom('gpt-4o-mini', 'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', 'nope/x', '', '/'), fc.string(), fc.integer(), fc.constant(null)),
    messages: fc.oneof(fc.array(fc.record({ role: fc.oneof(fc.constantFrom('user', 'system', 'assistant', 'tool'), fc.string()), content: fc.oneof(fc.string(), fc.anything(), fc.array(fc.record({ type: fc.constantFrom('text', 'image_url', 'x'), text: fc.anything() }))) }), { maxLength: 4 }), fc.anything()),
    stream: fc.oneof(fc.boolean(), fc.anything()),
    max_tokens: fc.oneof(fc.integer(), fc.double(), fc.string()),
    fallbacks: fc.oneof(fc.array(fc.string(), { maxLength: 3 }), fc.anything()),
    input: fc.anything(),
    temperature: fc.oneof(fc.double(), fc.string()),
  },
  { requiredKeys: [] },
)
const body = fc.oneof(
  chatish.map((value) => JSON.stringify(value)),
  fc.json(),
  fc.string({ maxLength: 300 }),
  fc.constantFrom('', '{', '[', '{"model":', 'null', '"x"', '1e999', '{"__proto__":{"polluted":1}}', '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":true}', '\u0000\u0001'),
  fc.integer({ min: 1, max: 200_000 }).map((size) => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(size) }] })),
)
const headers = fc.record(
  {
    'content-type': fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', 'multipart/form-data', '', 'application/x-www-form-urlencoded'),
    authorization: fc.oneof(fc.constantFrom('Bearer ', 'Bearer x', 'Basic Zm9vOmJhcg==', 'bearer'), fc.string({ maxLength: 50 }).map((text) => `Bearer ${text.replace(/[^\x21-\x7e]/g, '')}`)),
    'x-bf-session-id': fc.string({ maxLength: 100 }).map((text) => text.replace(/[^\x21-\x7e]/g, '')),
    'x-bf-session-ttl': fc.oneof(fc.integer().map(String), fc.constantFrom('-1', 'abc', '1e400')),
    'x-bf-direct-key': fc.constantFrom('sk-direct', ''),
    'x-bf-routing-log': fc.constantFrom('true', 'false', 'yes'),
    'anthropic-version': fc.constantFrom('2023-06-01', 'x'),
    'content-encoding': fc.constantFrom('gzip', 'identity', 'br'),
  },
  { requiredKeys: [] },
)

async function send(method: string, path: string, text: string | undefined, extra: Record<string, string>): Promise<{ status: number; text: string }> {
  const response = await fetch(`${gateway.url}${path}`, { method, headers: extra, body: text, signal: AbortSignal.timeout(30_000) })
  return { status: response.status, text: (await response.text()).slice(0, 300) }
}

const sawNo5xx = (method: string, path: string, answer: { status: number; text: string }) => {
  if (answer.status >= 500) throw new Error(`${method} ${path} answered ${answer.status}: ${answer.text}`)
}

describe('fuzzing every HTTP route with hostile input', () => {
  it('never answers 5xx on the inference routes, whatever the body, headers or query', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...INFERENCE), query, body, headers, async (path, search, text, extra) => {
        sawNo5xx('POST', path + search, await send('POST', path + search, text, extra))
      }),
      { numRuns: 250, seed: 1818, endOnFailure: true },
    )
  }, 240_000)

  it('never answers 5xx on the admin and open routes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ADMIN_GET), parameter, query, headers, async (template, value, search, extra) => {
        const path = template.replace('%s', encodeURIComponent(value)) + search
        sawNo5xx('GET', path, await send('GET', path, undefined, extra))
      }),
      { numRuns: 150, seed: 1819, endOnFailure: true },
    )
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ADMIN_WRITE), parameter, query, body, headers, async ([method, template], value, search, text, extra) => {
        const path = template.replace('%s', encodeURIComponent(value)) + search
        sawNo5xx(method, path, await send(method, path, text, extra))
      }),
      { numRuns: 150, seed: 1820, endOnFailure: true },
    )
  }, 240_000)

  it('is still up afterwards, holds nothing, and kept its memory bounded', async () => {
    expect((await send('GET', '/health', undefined, {})).status).toBe(200)
    const conditions = JSON.parse((await send('GET', '/api/adaptive-routing/conditions', undefined, {})).text) as { count: number }
    expect(conditions.count).toBe(0)
    const full = await (await fetch(`${gateway.url}/metrics`)).text()
    const rss = Number(/^switchboard_process_resident_memory_bytes (\d+)/m.exec(full)?.[1])
    expect(rss).toBeLessThan(1024 * 1024 * 1024)
  })
})
