/**
 * What an incident tells the operator must be true (issue 36, items 1, 4, 5 and 11), on real
 * processes: the simulator, one gateway node and a real Postgres. Each problem lives on its own
 * providers and models, so the items do not disturb each other; each `it` is named after what it
 * guards. History knobs are shortened through env (snapshots and counts every second).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from '../../gateway/test/harness.ts'

const KEYS = {
  mixX: 'sk-truth-mix-x-1111',
  mixY: 'sk-truth-mix-y-2222',
  alone: 'sk-truth-alone-3333',
  alpha: 'sk-truth-alpha-4444',
  beta: 'sk-truth-beta-5555',
  cred: 'sk-truth-cred-6666',
  credSpare: 'sk-truth-cred-spare-7777',
  slow: 'sk-truth-slow-8888',
  fast: 'sk-truth-fast-9999',
}

/** The faults every test starts from: each on keys no other test uses. */
const BASE_RULES = [
  // Item 1: m-mix is served by two providers, one failing with 500s, the other's only key rate limited for ten minutes.
  { key: KEYS.mixX, fault: 'server_error' },
  { key: KEYS.mixY, fault: { preset: 'rate_limit', retry_after_s: 600 } },
  // Item 4: m-alone has one provider, failing; m-pair has a failing provider and a healthy one.
  { key: KEYS.alone, fault: 'server_error' },
  { key: KEYS.alpha, fault: 'server_error' },
  // Item 11: one key slow on both models it serves.
  { key: KEYS.slow, latency_ms: 1500 },
]

/** A 401 that asks for a one-second wait: the credential hold waits the 10 s floor, so its check comes soon. */
const REJECTED = {
  status: 401,
  headers: { 'retry-after': '1' },
  body: { error: { message: 'Incorrect API key provided: sk-tru***6666.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
}

let simulator: SimulatorProcess
let gateway: GatewayProcess
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function get(path: string): Promise<Record<string, any>> {
  const response = await fetch(`${gateway.url}${path}`)
  expect(response.status, path).toBe(200)
  return (await response.json()) as Record<string, any>
}

async function chat(model: string): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(30_000),
  })
  await response.arrayBuffer()
  return response.status
}

/** One request for each of `models`, at once. */
const round = (models: readonly string[]) => Promise.all(models.map(chat))

/** Polls `read` until `check` passes, running `between` (traffic) in between; bounded by tries and time. */
async function until<T>(what: string, read: () => Promise<T>, check: (value: T) => boolean, between: () => Promise<unknown> = () => sleep(500), deadlineMs = 90_000): Promise<T> {
  const deadline = Date.now() + deadlineMs
  let last: T | undefined
  for (let attempt = 0; attempt < 400 && Date.now() < deadline; attempt++) {
    last = await read()
    if (check(last)) return last
    await between()
    await sleep(200)
  }
  throw new Error(`${what} did not happen; last: ${JSON.stringify(last, null, 1)?.slice(0, 4000)}`)
}

/** The incidents of `provider` opened since `from`. */
async function incidentsOf(provider: string, from: string): Promise<any[]> {
  return ((await get(`/api/adaptive-routing/history/issues?providers=${provider}&from=${encodeURIComponent(from)}`)).issues as any[])
}

const compat = { base_provider_type: 'openai' }

beforeAll(async () => {
  simulator = await startSimulator()
  await simulator.setRules(BASE_RULES)
  const network = { base_url: simulator.url, max_retries: 0 }
  const one = (name: string, value: string, models: string[]) => ({ name, value, models, weight: 1 })
  gateway = await startGateway(
    {
      providers: {
        mixx: { keys: [one('mix-x', KEYS.mixX, ['m-mix'])], network_config: network, custom_provider_config: compat },
        mixy: { keys: [one('mix-y', KEYS.mixY, ['m-mix'])], network_config: network, custom_provider_config: compat },
        alone: { keys: [one('alone-key', KEYS.alone, ['m-alone'])], network_config: network, custom_provider_config: compat },
        alpha: { keys: [one('alpha-key', KEYS.alpha, ['m-pair'])], network_config: network, custom_provider_config: compat },
        beta: { keys: [one('beta-key', KEYS.beta, ['m-pair'])], network_config: network, custom_provider_config: compat },
        cred: { keys: [one('cred-key', KEYS.cred, ['m-cred']), one('cred-spare', KEYS.credSpare, ['m-cred'])], network_config: network, custom_provider_config: compat },
        slowp: { keys: [one('slow-key', KEYS.slow, ['m-slow-1', 'm-slow-2']), one('fast-key', KEYS.fast, ['m-slow-1', 'm-slow-2'])], network_config: network, custom_provider_config: compat },
      },
    },
    { SWITCHBOARD_HISTORY_SNAPSHOT_MS: '1000' },
    90_000,
  )
}, 180_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

describe('what an incident tells the operator', () => {
  it('item 1: every incident of a model whose requests all fail with nothing left needs attention, and says so', async () => {
    const from = new Date(Date.now() - 1000).toISOString()
    const statuses: number[] = []
    const both = async () => [...(await incidentsOf('mixx', from)), ...(await incidentsOf('mixy', from))]
    const settled = await until(
      'every m-mix incident needs attention',
      both,
      (found) => found.some((issue) => issue.provider === 'mixx') && found.some((issue) => issue.provider === 'mixy') && found.every((issue) => issue.status === 'attention'),
      async () => statuses.push(...(await round(['m-mix', 'm-mix', 'm-mix']))),
    )
    // The premise: nothing served a request for the model.
    expect(statuses.length).toBeGreaterThan(0)
    expect(statuses.filter((status) => status === 200)).toEqual([])
    // The failing provider's incident and the held key's: both tell the operator there is nothing left.
    for (const issue of settled) expect(issue.what_would_help, issue.entity).toMatch(/m-mix are failing with no healthy key or provider left/)
    expect(settled.find((issue) => issue.provider === 'mixy')).toMatchObject({ action: 'held', reasons: ['rate_limit'] })
  }, 150_000)

  it('item 4: only failures another healthy provider could have served count as avoidable, and only they advise re-routing', async () => {
    const from = new Date(Date.now() - 1000).toISOString()
    // Re-routing is off (the default); both requests name their provider.
    let sent = 0
    const opened = await until(
      'both pinned problems open',
      async () => [...(await incidentsOf('alone', from)), ...(await incidentsOf('alpha', from))],
      (found) => found.some((issue) => issue.provider === 'alone' && issue.status === 'attention') && found.some((issue) => issue.provider === 'alpha' && issue.pinned_kept_failed >= 3),
      async () => (sent += (await round(['alone/m-alone', 'alpha/m-pair', 'alone/m-alone', 'alpha/m-pair'])).length),
    )
    expect(opened.filter((issue) => issue.provider === 'alone')).toHaveLength(1)
    expect(opened.filter((issue) => issue.provider === 'alpha')).toHaveLength(1)
    // Traffic has stopped: the request log says, request by request, which failures a setting could have avoided.
    const logs = await until(
      'every request in the log',
      async () => (await get(`/api/logs?from=${encodeURIComponent(from)}&models=m-alone,m-pair&limit=500`)).logs as any[],
      (entries) => entries.length >= sent,
    )
    const avoidable = logs.filter((entry) => entry.routing?.pinned_kept_failed === true)
    expect(avoidable.length).toBeGreaterThanOrEqual(3)
    // Only alpha's: beta served m-pair all along. Nothing else serves m-alone, so re-routing could not have helped it.
    expect(new Set(avoidable.map((entry) => entry.requested.provider))).toEqual(new Set(['alpha']))
    expect(logs.filter((entry) => entry.requested.provider === 'alone' && entry.status >= 500).length).toBeGreaterThanOrEqual(3)

    const summary = await until(
      'the summary counts every request',
      async () => (await get(`/api/adaptive-routing/history/summary?from=${encodeURIComponent(from)}`)).requests,
      // Counts are written once a second, behind the log.
      (requests) => requests.failed_avoidable >= avoidable.length,
    )
    expect(summary.failed_avoidable).toBe(avoidable.length)
    const [alone] = await incidentsOf('alone', from)
    const [alpha] = await incidentsOf('alpha', from)
    expect(alone.pinned_kept_failed).toBe(0)
    expect(alone.what_would_help).not.toMatch(/reroute_failed_directions/)
    expect(alone.what_would_help).toMatch(/no healthy key or provider left/)
    // Each avoidable failure once (not once per episode it ran into), and the advice that would have helped.
    expect(alpha.pinned_kept_failed).toBeGreaterThan(0)
    expect(alpha.pinned_kept_failed).toBeLessThanOrEqual(avoidable.length)
    expect(alpha.status).toBe('attention')
    expect(alpha.what_would_help).toMatch(/reroute_failed_directions/)
  }, 150_000)

  it('item 5: a rejected key a check proved valid, now rate limited, no longer says replace the key, and quotes the rate limit', async () => {
    const from = new Date(Date.now() - 1000).toISOString()
    await simulator.setRules([...BASE_RULES, { key: KEYS.cred, fault: REJECTED }])
    const conditions = async () => ((await get('/api/adaptive-routing/conditions')).conditions as any[]).filter((condition) => condition.key_name === 'cred-key')
    await until('the key held as rejected', conditions, (found) => found.some((condition) => condition.reason === 'credential'), () => round(['m-cred', 'm-cred']))
    const rejected = await until('the incident asks to replace the key', async () => incidentsOf('cred', from), (found) => found.some((issue) => /Replace the key/.test(issue.what_would_help ?? '')))
    expect(rejected).toHaveLength(1)
    // The key is valid after all, only rate limited now: its next check answers 429.
    await simulator.setRules([...BASE_RULES, { key: KEYS.cred, fault: { preset: 'rate_limit', retry_after_s: 600 } }])
    await until('the check finds the key rate limited', conditions, (found) => found.length > 0 && found.every((condition) => condition.reason === 'rate_limit'), () => round(['m-cred', 'm-cred']), 120_000)
    const [issue] = await until('the incident follows the check', async () => incidentsOf('cred', from), (found) => found.length === 1 && found[0].reasons.includes('rate_limit'), () => round(['m-cred']))
    expect(issue.what_would_help ?? '').not.toMatch(/Replace the key/)
    // The spare key serves the model: routing keeps traffic off the rate-limited key, nothing to do.
    expect(issue.status).toBe('mitigated')
    expect(issue.reasons).toEqual(['rate_limit', 'credential'])
    const detail = await get(`/api/adaptive-routing/history/issues/${issue.id}`)
    expect(detail.provider_message).not.toMatch(/Incorrect API key/)
    expect(detail.provider_message).toMatch(/[Rr]ate limit/)
  }, 240_000)

  it('item 11: a key slow on two models is one incident, the key\'s, not one per model', async () => {
    const from = new Date(Date.now() - 1000).toISOString()
    const keyIds = Object.fromEntries(((await get('/api/providers/slowp')).keys as any[]).map((key) => [key.name, key.id]))
    const slow = keyIds['slow-key']
    const found = await until(
      'the slow key degraded on both models',
      async () => (await incidentsOf('slowp', from)).filter((issue) => issue.key_ids.includes(slow)),
      (issues) => ['m-slow-1', 'm-slow-2'].every((model) => issues.some((issue) => issue.models.includes(model))),
      () => round(['m-slow-1', 'm-slow-2', 'm-slow-1', 'm-slow-2']),
      120_000,
    )
    expect(found.map((issue) => [issue.entity, issue.models])).toHaveLength(1)
    expect(found[0]).toMatchObject({ scope: 'key', entity: `key:slowp:${slow}`, key_ids: [slow], models: ['m-slow-1', 'm-slow-2'], action: 'reduced_traffic' })
    // The fast key had no incident of its own.
    expect((await incidentsOf('slowp', from)).filter((issue) => issue.key_ids.includes(keyIds['fast-key']))).toEqual([])
  }, 180_000)
})
