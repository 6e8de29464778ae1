/**
 * Issue 36 (items 3, 10, 11a, 11b, 11c), on real processes: the simulator, a two-node fleet on
 * real libp2p and one real Postgres. What history and the request log tell the operator must be
 * true: the settings in force when an incident opened, every settings change a real change,
 * config.json's key edits among recent changes once for the fleet, the dashboard's "moved off"
 * figure and the log filter it opens counting the same requests, a valid issues offset kept,
 * and a session that moved to another key never called kept. History knobs are shortened
 * through env (snapshots and counts every second).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { spawnNode, startSimulator, type SimulatorProcess } from '../../gateway/test/harness.ts'
import { freePort } from '@switchboard/test-kit'

const gatewayBin = new URL('../../gateway/bin/switchboard.js', import.meta.url).pathname

interface NodeProcess {
  url: string
  stop(): Promise<void>
}

const SECRET = 'changes-test-secret-0123456789abcdef'
const KEYS = {
  main: 'sk-chg-main-aaaa',
  second: 'sk-chg-second-bbbb',
  revoked: 'sk-chg-revoked-cccc',
  spare: 'sk-chg-spare-dddd',
  spareReplaced: 'sk-chg-spare-new-eeee',
  groq: 'gsk-chg-groq-ffff',
}
const MODEL = 'gpt-4o-mini'
const OTHER_MODEL = 'gpt-4o'
const SWITCHES_OFF = { direction_selection_enabled: true, route_selection_enabled: true, append_fallbacks_to_pinned: false, reroute_failed_directions: false, prune_failed_fallbacks: false }
const SWITCHES_ON = { ...SWITCHES_OFF, reroute_failed_directions: true }

/** The fleet's config.json; `spareValue` is what the item-10 restart changes. */
function config(simulatorUrl: string, spareValue: string) {
  const network = { base_url: simulatorUrl, max_retries: 2 }
  return {
    providers: {
      openai: {
        keys: [
          { name: 'main-key', value: KEYS.main, models: [MODEL], weight: 1 },
          { name: 'second-key', value: KEYS.second, models: [MODEL], weight: 1 },
          { name: 'prod-key-2', value: KEYS.revoked, models: [MODEL], weight: 1 },
          { name: 'spare-key', value: spareValue, models: [OTHER_MODEL], weight: 1 },
        ],
        network_config: network,
      },
      groq: {
        keys: [{ name: 'groq-1', value: KEYS.groq, models: [MODEL], weight: 1 }],
        network_config: { base_url: simulatorUrl, max_retries: 0 },
        custom_provider_config: { base_provider_type: 'openai' },
      },
    },
    load_balancer_config: SWITCHES_OFF,
  }
}

let simulator: SimulatorProcess
let database: TestDatabase
const nodes = new Map<string, NodeProcess>()
const names = ['node-a', 'node-b'] as const
const envs = new Map<string, NodeJS.ProcessEnv>()
const startedAt = new Date(Date.now() - 5_000).toISOString()

async function startNode(node: string, file: string): Promise<void> {
  const { process: running, match } = await spawnNode([gatewayBin, 'serve', '--config', file, '--port', '0'], /switchboard listening on (http:\/\/[\d.:]+)/, { LOG_LEVEL: 'info', ...envs.get(node) }, 90_000)
  nodes.set(node, { url: match[1]!, stop: running.stop })
}

async function writeConfig(spareValue: string): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'sb-changes-')), 'config.json')
  await writeFile(file, JSON.stringify(config(simulator.url, spareValue)))
  return file
}

async function call(node: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, any> }> {
  const response = await fetch(`${nodes.get(node)!.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

async function chat(node: string, model: string, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, any> }> {
  const response = await fetch(`${nodes.get(node)!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(30_000),
  })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls until `check` passes, doing `between` (or waiting) in between; bounded by tries and time. */
async function until<T>(what: string, read: () => Promise<T>, check: (value: T) => boolean, between?: () => Promise<unknown>, deadlineMs = 60_000): Promise<T> {
  let last: T | undefined
  const deadline = Date.now() + deadlineMs
  for (let attempt = 0; attempt < 400 && Date.now() < deadline; attempt++) {
    last = await read()
    if (check(last)) return last
    await (between?.() ?? sleep(500))
  }
  throw new Error(`${what} did not happen; last: ${JSON.stringify(last, null, 1)?.slice(0, 3000)}`)
}

const issues = async (node: string, query = '') => (await call(node, 'GET', `/api/adaptive-routing/history/issues?from=${encodeURIComponent(startedAt)}${query}`)).json
// (A node still starting answers 503 without the list: read as "not yet".)
const heldOn = async (node: string, keyName: string) => ((await call(node, 'GET', '/api/adaptive-routing/conditions')).json.conditions as any[] | undefined)?.some((condition) => condition.key_name === keyName) === true
const keyIdOf = async (name: string) => ((await call('node-a', 'GET', '/api/providers/openai')).json.keys as any[]).find((key) => key.name === name).id as string

beforeAll(async () => {
  simulator = await startSimulator()
  database = await createTestDatabase()
  await simulator.setRules([{ key: KEYS.revoked, fault: 'invalid_api_key' }])
  const ports = await Promise.all(names.map(() => freePort()))
  for (const [index, node] of names.entries()) {
    envs.set(node, {
      SWITCHBOARD_NODE_ID: node,
      SWITCHBOARD_REGION: 'eu',
      SWITCHBOARD_P2P_PORT: String(ports[index]),
      SWITCHBOARD_PEERS: ports.filter((_, other) => other !== index).map((port) => `127.0.0.1:${port}`).join(','),
      SWITCHBOARD_FLEET_SECRET: SECRET,
      SWITCHBOARD_DATA_DIR: await mkdtemp(join(tmpdir(), `sb-${node}-`)),
      SWITCHBOARD_DATABASE_URL: database.url,
      SWITCHBOARD_HISTORY_SNAPSHOT_MS: '1000',
    })
  }
  const file = await writeConfig(KEYS.spare)
  await Promise.all(names.map((node) => startNode(node, file)))
  await until('the fleet forms', async () => (await call('node-a', 'GET', '/api/cluster')).json.members?.length ?? 0, (count) => count >= 2)
}, 180_000)

afterAll(async () => {
  await Promise.all([...nodes.values()].map((node) => node.stop()))
  await simulator?.stop()
  await database?.drop()
})

describe('issue 36: what history and the request log tell the operator', () => {
  it('settings in effect at open are those in force then (off), not today\'s (on), and every settings change recorded is a real change', async () => {
    // The incident opens while re-routing is off (config.json's switches).
    await until('the revoked key held', () => heldOn('node-a', 'prod-key-2'), Boolean, () => chat('node-a', `openai/${MODEL}`))
    const revokedId = await keyIdOf('prod-key-2')
    const incident = await until('the revoked key\'s incident', async () => ((await issues('node-a')).issues as any[]).find((issue) => issue.key_ids.includes(revokedId)), (found) => found !== undefined)
    await sleep(1_000)

    // Then: on (node-b), off (node-a, whose own memory of the switches is its boot's), on again (node-b), and a PUT that changes nothing.
    const put = async (node: string, switches: Record<string, boolean | number>) => {
      const answer = await call(node, 'PUT', '/api/adaptive-routing/config', switches)
      expect(answer.status).toBe(200)
      await sleep(1_500)
    }
    await put('node-b', SWITCHES_ON)
    await put('node-a', SWITCHES_OFF)
    await put('node-b', SWITCHES_ON)
    await put('node-b', SWITCHES_ON)
    // History's own settings: one changed, one sent again as it was.
    await put('node-a', { ...SWITCHES_ON, history_enabled: true, history_retention_days: 8 })
    // node-b's view is on; the fleet's is on within the gossip's time.
    await until('the switch on across the fleet', async () => (await call('node-a', 'GET', '/api/adaptive-routing/config')).json.reroute_failed_directions, (on) => on === true)

    const changes = (detail: Record<string, any>) => (detail.recent_changes as any[]).filter((event) => event.kind === 'settings:changed' && Date.parse(event.at) > Date.parse(incident.opened_at))
    const detail = await until('four settings changes recorded', async () => (await call('node-b', 'GET', `/api/adaptive-routing/history/issues/${incident.id}`)).json, (found) => changes(found).length >= 4)
    expect(detail.settings_in_effect.at_open).toMatchObject({ reroute_failed_directions: false, history_enabled: true })
    expect(detail.settings_in_effect.now).toMatchObject({ reroute_failed_directions: true })
    // Exactly the four real changes, each naming only what changed, from what was in force to something else.
    const recorded = changes(detail)
    expect(recorded.map((event) => event.fields)).toEqual([['reroute_failed_directions'], ['reroute_failed_directions'], ['reroute_failed_directions'], ['history_retention_days']])
    expect(recorded.map((event) => [event.before.reroute_failed_directions, event.after.reroute_failed_directions])).toEqual([[false, true], [true, false], [false, true], [true, true]])
    expect([recorded[3].before.history_retention_days, recorded[3].after.history_retention_days]).toEqual([7, 8])
    for (const event of recorded) for (const field of event.fields) expect(event.before[field], JSON.stringify(event)).not.toBe(event.after[field])
  }, 120_000)

  it('the dashboard\'s "moved off" figure counts the requests its log filter (moved_off=true, served) lists', async () => {
    // groq fails; re-routing is on (the previous test left it on): a request naming groq is moved off to openai.
    await simulator.setRules([{ key: KEYS.revoked, fault: 'invalid_api_key' }, { key: KEYS.groq, fault: 'server_error' }])
    // A request naming groq that openai served without trying groq was moved off groq: the test counts them itself.
    let moved = 0
    const namingGroq = async () => {
      const extra = (await chat('node-a', `groq/${MODEL}`)).json.extra_fields
      if (extra?.provider === 'openai' && !(extra.attempts as any[]).some((attempt) => attempt.provider === 'groq')) moved++
      return moved
    }
    await until('a request naming groq moved off it', namingGroq, (count) => count > 0, () => Promise.all([chat('node-a', MODEL), sleep(300)]))
    // History saw groq's direction fail (its incident opened) ...
    await until('groq\'s incident', async () => ((await issues('node-a')).issues as any[]).some((issue) => issue.provider === 'groq' && issue.scope === 'direction' && issue.closed_at === null), Boolean)
    // ... and requests naming no provider while groq is failing: routing picks openai, it moves nothing off.
    for (let index = 0; index < 8; index++) await chat('node-a', MODEL)
    for (let index = 0; index < 3; index++) await namingGroq()
    const window = `from=${encodeURIComponent(startedAt)}`
    const read = async () => {
      const summary = (await call('node-a', 'GET', `/api/adaptive-routing/history/summary?${window}`)).json
      const logs = (await call('node-b', 'GET', `/api/logs?${window}&moved_off=true&status=2xx&limit=1`)).json
      return { figure: summary.requests.redirected as number, listed: logs.total as number }
    }
    // Both are written in batches: poll until both hold every moved request.
    const settled = await until('the figure and the list agree', read, (counts) => counts.listed === moved && counts.figure === counts.listed, () => sleep(1_000), 30_000)
    expect(settled).toEqual({ figure: moved, listed: moved })
  }, 120_000)

  it('keeps a valid issues offset that is not a multiple of limit, and gives the last page only past the end', async () => {
    const all = (await issues('node-a')).issues as any[]
    expect(all.length).toBeGreaterThanOrEqual(2)
    const total = all.length
    const inside = await issues('node-b', `&limit=${total}&offset=${total - 1}`)
    expect(inside).toMatchObject({ total, offset: total - 1, limit: total })
    expect(inside.issues).toHaveLength(1)
    const past = await issues('node-b', `&limit=${total}&offset=${total}`)
    expect(past).toMatchObject({ total, offset: 0 })
    expect(past.issues).toHaveLength(total)
  }, 60_000)

  it('marks a session kept only when its own key served it, not when it moved to another key', async () => {
    const session = { 'x-bf-session-id': 'session-36' }
    const first = await chat('node-a', `openai/${MODEL}`, session)
    expect(first.status).toBe(200)
    const remembered = first.json.extra_fields.key_name as string
    // The session's key answers the next request with a rate limit once: the request moves to the other key.
    await simulator.setRules([{ key: KEYS.revoked, fault: 'invalid_api_key' }, { key: KEYS.groq, fault: 'server_error' }, { key: remembered === 'main-key' ? KEYS.main : KEYS.second, fault: { preset: 'rate_limit', retry_after_s: 30 }, times: 1 }])
    const moved = await chat('node-a', `openai/${MODEL}`, session)
    expect(moved.status).toBe(200)
    expect(moved.json.extra_fields.attempts[0].key_name).toBe(remembered)
    expect(moved.json.extra_fields.key_name).not.toBe(remembered)
    const kept = await chat('node-a', `openai/${MODEL}`, session)
    expect(kept.json.extra_fields.key_name).toBe(moved.json.extra_fields.key_name)
    const entries = await until('the three requests in the log', async () => ((await call('node-b', 'GET', `/api/logs?session_id=session-36&sort=oldest&from=${encodeURIComponent(startedAt)}`)).json.logs as any[]) ?? [], (logs) => logs.length >= 3)
    expect(entries.map((entry) => [entry.served.key_name, entry.routing.session_kept])).toEqual([
      [remembered, null],
      [moved.json.extra_fields.key_name, false],
      [moved.json.extra_fields.key_name, true],
    ])
  }, 60_000)

  it('records key edits config.json made at a restart among recent changes, once for the fleet, without the value', async () => {
    // The whole fleet restarts with a config.json that gives spare-key a new value (which the provider refuses).
    await Promise.all([...nodes.values()].map((node) => node.stop()))
    await simulator.setRules([{ key: KEYS.revoked, fault: 'invalid_api_key' }, { key: KEYS.spareReplaced, fault: 'invalid_api_key' }])
    const file = await writeConfig(KEYS.spareReplaced)
    for (const node of names) await startNode(node, file)
    await until('the fleet forms again', async () => (await call('node-a', 'GET', '/api/cluster')).json.members?.length ?? 0, (count) => count >= 2)
    // The edited key is refused: its incident's recent changes show the edit that explains it.
    await until('the edited key held', () => heldOn('node-b', 'spare-key'), Boolean, () => chat('node-b', `openai/${OTHER_MODEL}`))
    const spareId = await keyIdOf('spare-key')
    const incident = await until('the edited key\'s incident', async () => ((await issues('node-b')).issues as any[] | undefined)?.find((issue) => issue.key_ids.includes(spareId) && issue.closed_at === null), (found) => found !== undefined)
    // (A node still starting answers 503 without the detail: the poll goes on.)
    const detail = await until('the edit among recent changes', async () => (await call('node-a', 'GET', `/api/adaptive-routing/history/issues/${incident.id}`)).json, (found) => (found.recent_changes as any[] | undefined)?.some((event) => event.kind === 'key:edited' && event.key_id === spareId) === true)
    // (The fleet's first boot recorded every key as created; the restart's edit is the one that is not a creation.)
    const edits = (detail.recent_changes as any[]).filter((event) => event.kind === 'key:edited' && event.key_id === spareId && event.created === false)
    expect(edits).toHaveLength(1)
    expect(edits[0]).toMatchObject({ key_name: 'spare-key', created: false, fields: ['value'], origin: 'config', provider: 'openai' })
    // Nothing else in the file changed: no other key was recorded as edited.
    expect((detail.recent_changes as any[]).filter((event) => event.kind === 'key:edited' && event.created === false && event.key_id !== spareId)).toEqual([])
    const text = JSON.stringify(detail)
    for (const value of Object.values(KEYS)) expect(text).not.toContain(value)
  }, 180_000)
})
