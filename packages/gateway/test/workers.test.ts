/**
 * A node with workers (issue 38, `--workers 2`): one port, two event loops, one state. A hold
 * placed by a request on either worker is the node's; a worker SIGKILLed is replaced with its
 * holds intact; a gateway key's requests per minute are counted once for the node; a session
 * keeps its key whichever worker takes its next request.
 *
 * Each request here opens its own connection, so the primary's round robin spreads them over
 * both workers; the `x-switchboard-worker` header says which one answered.
 */
import { request } from 'node:http'
import { readFile } from 'node:fs/promises'
import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshRound, onWorker, revokedAndHealthyConfig, sendOnce as send, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const REVOKED = 'sk-workers-revoked-aaaa'
const HEALTHY = 'sk-workers-healthy-bbbb'

let simulator: SimulatorProcess
let gateway: GatewayProcess

beforeAll(async () => {
  simulator = await startSimulator()
  gateway = await startGateway(revokedAndHealthyConfig(simulator.url, REVOKED, HEALTHY), { SWITCHBOARD_WORKERS: '2', SWITCHBOARD_GATEWAY_KEY_WINDOW_MS: String(24 * 3_600_000) })
}, 90_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

const chat = (headers: Record<string, string> = {}) => send(gateway.url, 'POST', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, headers)
const conditions = (worker: number) => onWorker(worker, () => send(gateway.url, 'GET', '/api/adaptive-routing/conditions'))
const toRevoked = async () => (await simulator.requests()).filter((entry) => entry.key_suffix === 'aaaa').length
/** The refused key's requests beyond its first: the hold's checks (one per due time, whichever worker makes it), as the node counts them. */
const checksMade = async () => ((await conditions(1)).json.conditions as { checks: number }[]).reduce((total, condition) => total + condition.checks, 0)

/** True when routing lent this request to a recovering key's probe or a trial first (its routing log says so). */
const lentToProbe = (answer: Awaited<ReturnType<typeof chat>>) => ((answer.json.extra_fields.routing_log ?? []) as string[]).some((line) => line.includes('trying it with this request first'))
/** The first answer of `send` (up to 4 tries) that routing did not lend to a probe or a trial. */
async function unlent(send: () => ReturnType<typeof chat>): ReturnType<typeof chat> {
  let answer = await send()
  for (let tries = 1; tries < 4 && lentToProbe(answer); tries++) answer = await send()
  return answer
}

/** The pids of the node's workers, by worker number (read from each child's environment). */
async function workerPids(primary: number): Promise<Map<number, number>> {
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(primary)], { encoding: 'utf8' }).split('\n').map((line) => Number(line.trim())).filter((pid) => pid > 0)
  const pids = new Map<number, number>()
  for (const pid of children) {
    const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '')
    const index = /(?:^|\0)SWITCHBOARD_WORKER_INDEX=(\d+)/.exec(environ)?.[1]
    if (index !== undefined) pids.set(Number(index), pid)
  }
  return pids
}

describe('a node with two workers', () => {
  it('shares a hold placed by a request on either worker', async () => {
    const placedBy = new Set<number>()
    for (let round = 0; round < 8 && placedBy.size < 2; round++) {
      await freshRound(simulator, gateway)
      await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
      const workers = new Set<number>()
      for (let index = 0; index < 16; index++) {
        const answer = await chat()
        expect(answer.status).toBe(200)
        workers.add(answer.worker)
        if (answer.json.extra_fields.attempts.length > 1) placedBy.add(answer.worker)
      }
      expect([...workers].sort()).toEqual([1, 2])
      // One refusal, one hold: the other worker never sends the refused key a request of its own.
      expect(await toRevoked()).toBe(1)
      for (const worker of [1, 2]) expect((await conditions(worker)).json.count).toBe(1)
    }
    expect([...placedBy].sort()).toEqual([1, 2])
  }, 120_000)

  it('replaces a worker SIGKILLed, with the holds intact', async () => {
    await freshRound(simulator, gateway)
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    // Until the refused key was tried (a route released by the last test is probed at its own pace).
    for (let index = 0; index < 16 && (await toRevoked()) === 0; index++) expect((await chat()).status).toBe(200)
    expect(await toRevoked()).toBe(1)
    const primary = gateway.pid()
    for (const worker of [2, 1]) {
      const before = await workerPids(primary)
      process.kill(before.get(worker)!, 'SIGKILL')
      // While the new worker boots, the node serves every request: it takes connections only once wired.
      const statuses = new Set<number>()
      await expect.poll(async () => {
        statuses.add((await chat()).status)
        const now = await workerPids(primary)
        return now.has(worker) && now.get(worker) !== before.get(worker) && (await conditions(worker).catch(() => null)) !== null
      }, { timeout: 30_000, interval: 50 }).toBe(true)
      expect([...statuses]).toEqual([200])
      // The new worker answers once it is ready; it holds what the node held.
      await expect.poll(async () => (await conditions(worker).catch(() => null))?.json.count, { timeout: 30_000 }).toBe(1)
      for (let index = 0; index < 8; index++) expect((await chat()).status).toBe(200)
      // On a loaded machine a restart can outlast the hold's first due time: its check is the only other request.
      expect(await toRevoked()).toBe(1 + (await checksMade()))
    }
    expect(gateway.output()).toMatch(/worker 2 exited \(SIGKILL\); starting another/)
    expect(gateway.output()).toMatch(/worker 1 exited \(SIGKILL\); starting another/)
  }, 120_000)

  it('keeps a session on its key whichever worker takes its next request', async () => {
    await freshRound(simulator, gateway)
    // Each next request goes to the other worker right after the answer: no time for news to travel, the order must do.
    for (let session = 0; session < 32; session++) {
      const headers = { 'x-bf-session-id': `workers-session-${session}-${Date.now()}`, 'x-bf-routing-log': 'true' }
      // The key the last test released is recovering: a worker that sent it nothing for 2 s lends a request to its probe,
      // and the session stays where it was, or, new, is not placed (issue 36, item 8). The request after that shows it.
      const first = await unlent(() => chat(headers))
      const next = await unlent(() => onWorker(first.worker === 1 ? 2 : 1, () => chat(headers)))
      expect(next.json.extra_fields.key_name).toBe(first.json.extra_fields.key_name)
    }
  }, 60_000)

  it('answers /metrics for the whole node on either worker', async () => {
    await freshRound(simulator, gateway)
    await simulator.setRules([{ key: REVOKED, fault: 'invalid_api_key' }])
    const scrape = async (worker: number) => {
      const text = await new Promise<string>((resolve, reject) => {
        const attempt = () =>
          request(`${gateway.url}/metrics`, { agent: false }, (incoming) => {
            let body = ''
            incoming.setEncoding('utf8')
            incoming.on('data', (chunk: string) => (body += chunk))
            incoming.on('end', () => (Number(incoming.headers['x-switchboard-worker']) === worker ? resolve(body) : attempt()))
          }).on('error', reject).end()
        attempt()
      })
      const sum = (name: string) => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)$`, 'gm'))].reduce((total, match) => total + Number(match[1]), 0)
      return { requests: sum('switchboard_requests_total'), held: sum('switchboard_holds_active') }
    }
    const before = await scrape(1)
    const workers = new Set<number>()
    // Until both workers served and the refused key was tried: recovering from the last release, it gets a small share.
    let sent = 0
    for (; sent < 32 && (sent < 6 || workers.size < 2 || (await toRevoked()) === 0); sent++) workers.add((await chat()).worker)
    expect([...workers].sort()).toEqual([1, 2])
    expect(await toRevoked()).toBeGreaterThan(0)
    // A recompute (every 5 s) sets the holds gauge on each worker.
    await expect.poll(async () => (await scrape(2)).held, { timeout: 15_000 }).toBe(1)
    for (const worker of [1, 2]) expect((await scrape(worker)).requests - before.requests).toBe(sent)
  }, 60_000)

  it('counts a gateway key\'s requests per minute once for the node', async () => {
    const created = await send(gateway.url, 'POST', '/api/gateway-keys', { name: 'limited', requests_per_minute: 10 })
    expect(created.status).toBe(201)
    const secret = created.json.key as string
    // Both workers know the key (the other re-reads the keys when told): a call without one is refused on each.
    for (const worker of [1, 2]) await expect.poll(async () => (await onWorker(worker, () => chat())).status, { timeout: 10_000 }).toBe(401)
    const statuses: number[] = []
    const workers = new Set<number>()
    for (let index = 0; index < 16; index++) {
      const answer = await chat({ authorization: `Bearer ${secret}` })
      statuses.push(answer.status)
      workers.add(answer.worker)
    }
    expect([...workers].sort()).toEqual([1, 2])
    expect(statuses.filter((status) => status === 200)).toHaveLength(10)
    expect(statuses.filter((status) => status === 429)).toHaveLength(6)
  }, 60_000)
})
