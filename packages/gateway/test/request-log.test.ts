/**
 * The request log end to end (issue 15), two gateway processes on one Postgres: the support
 * question of reference/adaptive-routing-overview.txt ("The request log") answered from the log
 * of one request, the `moved_off` and `check` filters, and every node reading every node's log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let nodeA: GatewayProcess
let nodeB: GatewayProcess

const KEY_VALUES = ['sk-reqlog-oa1-11111111', 'sk-reqlog-oa2-22222222', 'azure-reqlog-eu1-33333333', 'azure-reqlog-eu2-44444444']

beforeAll(async () => {
  simulator = await startSimulator()
  const network = { base_url: simulator.url, retry_backoff_initial: 10, retry_backoff_max: 20, max_retries: 0 }
  const config = {
    providers: {
      openai: {
        keys: [
          { name: 'prod-1', value: KEY_VALUES[0], models: ['gpt-4o'], weight: 1 },
          { name: 'prod-2', value: KEY_VALUES[1], models: ['gpt-4o'], weight: 1 },
        ],
        network_config: network,
      },
      azure: {
        keys: [
          { name: 'eu-key-1', value: KEY_VALUES[2], models: ['gpt-4o'], weight: 1 },
          { name: 'eu-key-2', value: KEY_VALUES[3], models: ['gpt-4o'], weight: 1 },
        ],
        network_config: network,
      },
    },
    load_balancer_config: { reroute_failed_directions: true },
  }
  nodeA = await startGateway(config, { SWITCHBOARD_NODE_ID: 'log-node-a' })
  nodeB = await startGateway(config, { SWITCHBOARD_NODE_ID: 'log-node-b', SWITCHBOARD_DATABASE_URL: nodeA.databaseUrl })
}, 60_000)

afterAll(async () => {
  await nodeB?.stop()
  await nodeA?.stop()
  await simulator?.stop()
})

async function call(node: GatewayProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(`${node.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: response.status, headers: response.headers, json: (await response.json()) as Record<string, any> }
}

const chat = (node: GatewayProcess, model: string) => call(node, 'POST', '/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] })

/** Polls the log until `find` is satisfied (rows land in batches, within a second or so). */
async function waitForLogs(node: GatewayProcess, query: string, done: (json: Record<string, any>) => boolean): Promise<Record<string, any>> {
  const until = Date.now() + 10_000
  for (;;) {
    const answer = await call(node, 'GET', `/api/logs?${query}`)
    expect(answer.status).toBe(200)
    if (done(answer.json) || Date.now() > until) return answer.json
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe('the request log', () => {
  let movedId = ''

  it('answers "why was this request served by Azure when the app asked for OpenAI?" from the log of that one request', async () => {
    await simulator.setRules([
      { provider: 'openai', fault: 'server_error' },
      { provider: 'azure', key: KEY_VALUES[2], fault: { preset: 'rate_limit', retry_after_s: 1 } },
    ])
    // OpenAI fails until the balancer calls the direction failed (one or two 5 s cycles); then re-routing moves requests naming it.
    const started = Date.now()
    let rerouted = false
    while (!rerouted && Date.now() - started < 20_000) {
      const answer = await chat(nodeA, 'openai/gpt-4o')
      rerouted = answer.status === 200 && answer.json.extra_fields.attempts[0].provider === 'azure'
      if (!rerouted) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(rerouted).toBe(true)
    // Azure's eu-key-1 is rate limited: the first request that meets it holds it (then rotates to eu-key-2).
    for (let tries = 0; tries < 20; tries++) {
      const conditions = (await call(nodeA, 'GET', '/api/adaptive-routing/conditions')).json.conditions as Record<string, any>[]
      if (conditions.some((condition) => condition.provider === 'azure' && condition.key_name === 'eu-key-1')) break
      await chat(nodeA, 'azure/gpt-4o')
    }
    // The request of the support question.
    const answer = await chat(nodeA, 'openai/gpt-4o')
    expect(answer.status).toBe(200)
    const id = answer.headers.get('x-request-id')!
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(answer.json.extra_fields.request_id).toBe(id)
    movedId = id

    // Its log, read on the other node.
    let entry: Record<string, any> | undefined
    for (let tries = 0; tries < 50 && entry === undefined; tries++) {
      const read = await call(nodeB, 'GET', `/api/logs/${id}`)
      if (read.status === 200) entry = read.json
      else {
        expect(read.status).toBe(404)
        expect(read.json.error.code).toBe('log_not_found')
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
    expect(entry).toBeDefined()
    expect(entry).toMatchObject({
      id,
      node_id: 'log-node-a',
      surface: 'chat_completions',
      requested: { provider: 'openai', model: 'gpt-4o', fallbacks: [], session_id: null },
      served: { provider: 'azure', model: 'gpt-4o', key_name: 'eu-key-2' },
      status: 200,
      failure_class: null,
      stream: false,
      gateway_key: null,
      routing: {
        picked_by: 'routing',
        moved_off: { provider: 'openai', reason: 'failed' },
        skipped_keys: [expect.objectContaining({ provider: 'azure', model: 'gpt-4o', key_name: 'eu-key-1', reason: 'rate_limit' })],
        check: null,
        added_fallback_served: false,
      },
    })
    expect(entry!.attempts).toEqual([expect.objectContaining({ provider: 'azure', key_name: 'eu-key-2', status: 200, failure_class: null })])
    expect(entry!.usage).toEqual({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) })
    expect(entry!.routing.log.join('\n')).toMatch(/re-routed to the best healthy provider/)
    expect(entry!.routing.log.join('\n')).toMatch(/Skipping 1 of 2 keys for azure\/gpt-4o/)
    // "View in routing history": the moment and the entities.
    expect(entry!.history.entities).toEqual(expect.arrayContaining(['direction:openai:gpt-4o', 'direction:azure:gpt-4o']))
    expect(Date.parse(entry!.history.from)).toBeLessThan(Date.parse(entry!.at))
    // No secret anywhere in the log.
    const text = JSON.stringify(entry)
    for (const value of KEY_VALUES) expect(text).not.toContain(value)
  }, 60_000)

  it('finds every request routing moved off the provider it named, from every node', async () => {
    for (const node of [nodeA, nodeB]) {
      const page = await waitForLogs(node, 'moved_off=true&limit=500', (json) => json.logs.some((entry: any) => entry.id === movedId))
      expect(page.logs.map((entry: any) => entry.id)).toContain(movedId)
      expect(page.logs.every((entry: any) => entry.routing.moved_off?.provider === 'openai')).toBe(true)
      expect(page.facets.moved_off.true).toBe(page.total)
      expect(page.total).toBeGreaterThan(0)
    }
    // The failed tries before re-routing are logged too, with their class.
    const failed = await waitForLogs(nodeB, 'providers=openai&status=5xx', (json) => json.total > 0)
    expect(failed.logs[0]).toMatchObject({ served: { provider: 'openai' }, failure_class: 'transient', routing: { picked_by: 'caller', moved_off: null } })
  })

  it('finds the check of a held key with check=true, and its outcome', async () => {
    // The rate limit is over; once the hold is due (10 s, the shortest hold, ±10 %) the next request to azure checks eu-key-1.
    await simulator.setRules([{ provider: 'openai', fault: 'server_error' }])
    const started = Date.now()
    let checked = false
    while (!checked && Date.now() - started < 20_000) {
      await chat(nodeA, 'azure/gpt-4o')
      const conditions = (await call(nodeA, 'GET', '/api/adaptive-routing/conditions')).json.conditions as Record<string, any>[]
      checked = !conditions.some((condition) => condition.provider === 'azure' && condition.key_name === 'eu-key-1')
      if (!checked) await new Promise((resolve) => setTimeout(resolve, 500))
    }
    expect(checked).toBe(true)
    const page = await waitForLogs(nodeB, 'check=true', (json) => json.total > 0)
    expect(page.total).toBe(1)
    expect(page.logs[0].routing.check).toMatchObject({ provider: 'azure', model: 'gpt-4o', key_name: 'eu-key-1', outcome: 'served' })
    expect(page.logs[0].served.key_name).toBe('eu-key-1')
    // The page holds that one row; the facets count every key of the window, each named as configured.
    const facetKeys = Object.keys(page.facets.key_ids)
    expect(facetKeys.length).toBeGreaterThan(1)
    expect(facetKeys.map((id) => page.key_names[id]).sort()).toEqual(expect.arrayContaining(['eu-key-1', 'prod-1']))
    expect(facetKeys.every((id) => ['prod-1', 'prod-2', 'eu-key-1', 'eu-key-2'].includes(page.key_names[id]))).toBe(true)
  }, 40_000)

  it('answers a bad parameter with a 400 naming it, and a bad id with a 400', async () => {
    for (const query of ['sort=priority', 'check=yes', 'limit=0', 'offset=-1', 'from=yesterday', 'status=ok', 'picked_by=pin', 'request_id=123', 'provider=openai']) {
      const answer = await call(nodeA, 'GET', `/api/logs?${query}`)
      expect(answer.status, query).toBe(400)
      expect(answer.json.error.code).toBe('invalid_request')
      expect(answer.json.error.param).toBe(query.split('=')[0])
    }
    const bad = await call(nodeA, 'GET', '/api/logs/not-an-id')
    expect(bad.status).toBe(400)
    expect(bad.json.error.param).toBe('id')
  })

  it('names the gateway key the caller used, and never its secret', async () => {
    // Last: once a gateway key exists, every inference call needs one.
    const created = await call(nodeA, 'POST', '/api/gateway-keys', { name: 'support-app' })
    expect(created.status).toBe(201)
    const secret = created.json.key as string
    const response = await fetch(`${nodeA.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` }, body: JSON.stringify({ model: 'azure/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) })
    expect(response.status).toBe(200)
    const id = response.headers.get('x-request-id')!
    await response.arrayBuffer()
    let entry: Record<string, any> | undefined
    for (let tries = 0; tries < 50 && entry === undefined; tries++) {
      const read = await call(nodeB, 'GET', `/api/logs/${id}`)
      if (read.status === 200) entry = read.json
      else await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(entry?.gateway_key).toBe('support-app')
    expect(JSON.stringify(entry)).not.toContain(secret)
    const found = await waitForLogs(nodeA, 'search=support-app', (json) => json.total > 0)
    expect(found.logs.map((log: any) => log.id)).toEqual([id])
  })

  it('counts its rows in /metrics', async () => {
    const text = await (await fetch(`${nodeA.url}/metrics`)).text()
    const written = Number(/^switchboard_request_log_rows_written_total (\d+)/m.exec(text)?.[1])
    expect(written).toBeGreaterThan(0)
    expect(text).toMatch(/^switchboard_request_log_rows_dropped_total\{reason="overflow"\} 0$/m)
    expect(text).toMatch(/^switchboard_request_log_write_seconds_count \d+/m)
  })
})
