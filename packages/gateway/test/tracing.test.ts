/**
 * OpenTelemetry traces (issue 40) with real processes: two fleet nodes exporting OTLP/HTTP (A
 * protobuf, B JSON) to a real receiver in the test, the simulator upstream. A request that rotates keys and falls
 * back gives the expected span tree and events, under the caller's traceparent, and each attempt
 * carried its own traceparent upstream; a request on node B that skips a key held from node A
 * links to the span on A whose refusal placed the hold; no secret reaches the receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'
import { freePort } from '@switchboard/test-kit'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts'

const SECRET = 'trace-fleet-secret-0123456789abcdef'
const ADMIN_TOKEN = 'trace-admin-token-5f0c9a1e77'
const REVOKED = 'sk-trace-revoked-aaaa'
const NO_MINI = 'sk-trace-nomini-bbbb'
const ANTHROPIC = 'sk-ant-trace-cccc'
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'
const SERVER = 2
const CLIENT = 3

let simulator: SimulatorProcess
let receiver: OtlpReceiver
let database: TestDatabase
const nodes = new Map<string, GatewayProcess>()

function config(simulatorUrl: string) {
  return {
    providers: {
      openai: {
        keys: [
          { name: 'revoked', value: REVOKED, models: ['*'], weight: 1 },
          { name: 'no-mini', value: NO_MINI, models: ['*'], weight: 1 },
        ],
        network_config: { base_url: simulatorUrl },
      },
      anthropic: { keys: [{ name: 'claude', value: ANTHROPIC, models: ['*'], weight: 1 }], network_config: { base_url: simulatorUrl } },
    },
  }
}

async function chat(node: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await fetch(`${nodes.get(node)!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'the secret word is pineapple' }], ...body }),
  })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

async function held(node: string): Promise<{ key_name: string; model: string | null }[]> {
  const response = await fetch(`${nodes.get(node)!.url}/api/adaptive-routing/conditions`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  return ((await response.json()) as { conditions: { key_name: string; model: string | null }[] }).conditions
}

/** The spans of one trace once the request's SERVER span and `clients` CLIENT spans arrived. */
async function traceOf(traceId: string, clients: number): Promise<ReceivedSpan[]> {
  let spans: ReceivedSpan[] = []
  await expect.poll(() => {
    spans = receiver.spans().filter((span) => span.traceId === traceId)
    return spans.filter((span) => span.kind === SERVER).length === 1 && spans.filter((span) => span.kind === CLIENT).length >= clients
  }, { timeout: 15_000 }).toBe(true)
  return spans
}

beforeAll(async () => {
  ;[simulator, receiver, database] = await Promise.all([startSimulator(), startOtlpReceiver(), createTestDatabase()])
  const ports = await Promise.all([freePort(), freePort()])
  const names = ['node-a', 'node-b']
  const started = await Promise.all(names.map(async (node, index) => {
    const env = {
      SWITCHBOARD_NODE_ID: node,
      SWITCHBOARD_P2P_PORT: String(ports[index]),
      SWITCHBOARD_PEERS: `127.0.0.1:${ports[1 - index]}`,
      SWITCHBOARD_FLEET_SECRET: SECRET,
      SWITCHBOARD_ADMIN_TOKENS: `${ADMIN_TOKEN}:update`,
      SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-trace-${node}-`)),
      SWITCHBOARD_DATABASE_URL: database.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      // A exports protobuf (the default, our encoder), B JSON (the official serializer).
      ...(node === 'node-b' ? { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' } : {}),
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'switchboard-test',
    }
    return [node, await startGateway(config(simulator.url), env)] as const
  }))
  for (const [node, process] of started) nodes.set(node, process)
}, 90_000)

afterAll(async () => {
  for (const process of nodes.values()) await process.stop()
  await simulator?.stop()
  await receiver?.stop()
  await database?.drop()
})

describe('traces of inference requests', () => {
  let placedOnA: ReceivedSpan[] = []

  it('gives a request that rotates keys and falls back a SERVER span under the caller\'s traceparent, a CLIENT span per attempt, and events for the rotation, the fallback and the holds', async () => {
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }, { key: NO_MINI, model: 'gpt-4o-mini', fault: 'model_access' }])
    await simulator.resetRequests()
    const answer = await chat('node-a', { model: 'openai/gpt-4o-mini', fallbacks: ['anthropic/claude-3-5-haiku-latest'] }, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` })
    expect(answer.status).toBe(200)
    expect(answer.json.extra_fields.attempts.map((attempt: { provider: string }) => attempt.provider)).toEqual(['openai', 'openai', 'anthropic'])

    const spans = await traceOf(CALLER_TRACE, 3)
    const server = spans.find((span) => span.kind === SERVER)!
    expect(server).toMatchObject({ name: 'POST /v1/chat/completions', parentSpanId: CALLER_SPAN })
    expect(server.resource).toMatchObject({ 'service.name': 'switchboard-test', 'switchboard.node_id': 'node-a' })
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'openai/gpt-4o-mini',
      'gen_ai.response.model': 'claude-3-5-haiku-latest',
      'switchboard.provider': 'anthropic',
      'switchboard.key_name': 'claude',
      'switchboard.surface': 'chat_completions',
      'switchboard.attempts': 3,
      'http.response.status_code': 200,
    })
    expect(server.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0)
    expect(server.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0)
    const events = server.events.map((event) => event.name)
    expect(events).toEqual(['switchboard.key.rotated', 'switchboard.fallback'])
    expect(server.events[1]!.attributes).toMatchObject({ 'switchboard.provider': 'anthropic', 'switchboard.attempt': 3 })

    const clients = spans.filter((span) => span.kind === CLIENT).sort((a, b) => Number(a.attributes['switchboard.attempt']) - Number(b.attributes['switchboard.attempt']))
    expect(clients.map((span) => span.parentSpanId)).toEqual([server.spanId, server.spanId, server.spanId])
    expect(clients.map((span) => span.name)).toEqual(['chat gpt-4o-mini', 'chat gpt-4o-mini', 'chat claude-3-5-haiku-latest'])
    expect(clients.map((span) => span.attributes['gen_ai.provider.name'])).toEqual(['openai', 'openai', 'anthropic'])
    expect(new Set(clients.slice(0, 2).map((span) => span.attributes['switchboard.failure_class']))).toEqual(new Set(['credential', 'model_access']))
    expect(clients[2]!.attributes).toMatchObject({ 'switchboard.key_name': 'claude', 'gen_ai.response.model': 'claude-3-5-haiku-latest', 'http.response.status_code': 200 })
    expect(clients[2]!.attributes['switchboard.failure_class']).toBeUndefined()
    // Each refused openai attempt placed a hold: an event on its own span.
    for (const client of clients.slice(0, 2)) {
      expect(client.status.code).toBe(2)
      expect(client.events.map((event) => event.name)).toEqual(['switchboard.hold.placed'])
      expect(client.events[0]!.attributes['switchboard.key_name']).toBe(client.attributes['switchboard.key_name'])
    }
    placedOnA = clients.slice(0, 2)

    // Every attempt sent its own span as the upstream's traceparent.
    const sent = (await simulator.requests()).map((request) => request.traceparent)
    expect(sent).toEqual(clients.map((span) => `00-${CALLER_TRACE}-${span.spanId}-01`))
  }, 60_000)

  it('links a request on node B that skips a key held from node A to the span on A that placed the hold', async () => {
    // The whole-key hold of "revoked" (a credential refusal) reaches B by gossip.
    await expect.poll(async () => (await held('node-b')).some((hold) => hold.key_name === 'revoked' && hold.model === null), { timeout: 20_000 }).toBe(true)
    await simulator.setRules([])
    await simulator.resetRequests()
    const answer = await chat('node-b', { model: 'openai/gpt-4o' })
    expect(answer.status).toBe(200)
    expect(answer.json.extra_fields.key_name).toBe('no-mini')

    const requestId = answer.json.extra_fields.request_id as string
    let server: ReceivedSpan | undefined
    await expect.poll(() => (server = receiver.spans().find((span) => span.kind === SERVER && span.attributes['switchboard.request_id'] === requestId)) !== undefined, { timeout: 15_000 }).toBe(true)
    expect(server!.resource['switchboard.node_id']).toBe('node-b')
    const [client] = await traceOf(server!.traceId, 1).then((spans) => spans.filter((span) => span.kind === CLIENT))
    const placedBy = placedOnA.find((span) => span.attributes['switchboard.key_name'] === 'revoked')!
    expect(client!.links).toEqual([{ traceId: CALLER_TRACE, spanId: placedBy.spanId, attributes: { 'switchboard.provider': 'openai', 'switchboard.key_name': 'revoked', 'switchboard.link': 'hold_placed' } }])
    expect(client!.events).toEqual([{ name: 'switchboard.key.skipped', attributes: { 'switchboard.provider': 'openai', 'switchboard.key_name': 'revoked', 'switchboard.skip_reason': 'held', 'switchboard.linked_holds': 1 } }])
  }, 60_000)

  it('exports no secret: no key value, admin token, fleet secret, Authorization header or prompt', async () => {
    const everything = receiver.bodies.join('\n')
    expect(everything.length).toBeGreaterThan(0)
    expect(new Set(receiver.types)).toEqual(new Set(['application/x-protobuf', 'application/json']))
    // The export queue never filled and every export was taken: nothing dropped or lost, and the counts say so.
    const metrics = await (await fetch(`${nodes.get('node-a')!.url}/metrics`)).text()
    expect(metrics).toMatch(/^switchboard_trace_spans_dropped_total 0$/m)
    expect(metrics).toMatch(/^switchboard_trace_spans_failed_total 0$/m)
    for (const secret of [REVOKED, NO_MINI, ANTHROPIC, ADMIN_TOKEN, SECRET, 'Bearer', 'authorization', 'pineapple']) {
      expect(everything, secret).not.toContain(secret)
    }
  })
})
