/**
 * Only a failed check moves a held key up the ladder (issue 36, item 6), on a real gateway and
 * simulator: a request's own retries on a key it just held, and the requests sent anyway while
 * every key is held, leave the hold on its first rung; the one check let through when the key is
 * due moves it up exactly one rung. Spec: reference/adaptive-load-balancing.txt, "How long a key
 * is held" ("Only a failed check moves the key up the ladder").
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { freshRound, startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

let simulator: SimulatorProcess
let gateway: GatewayProcess

const LIMITED = 'sk-ladder-limited-aaaa'
/** OpenAI's 429 without a Retry-After: the hold waits on the ladder (30 s, 1 m, 2 m), and rotation retries the key. */
const RATE_LIMITED_NO_WAIT = {
  status: 429,
  body: JSON.stringify({ error: { message: 'Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 500, Used 500, Requested 1.', type: 'requests', param: null, code: 'rate_limit_exceeded' } }),
}

beforeAll(async () => {
  simulator = await startSimulator()
  gateway = await startGateway({
    providers: {
      openai: {
        keys: [{ name: 'limited', value: LIMITED, models: ['*'], weight: 1 }],
        network_config: { base_url: simulator.url, max_retries: 3, retry_backoff_initial: 10, retry_backoff_max: 50 },
      },
    },
  })
}, 60_000)

afterAll(async () => {
  await gateway?.stop()
  await simulator?.stop()
})

beforeEach(() => freshRound(simulator, gateway))

async function chat(): Promise<{ status: number; json: Record<string, any> }> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-bf-routing-log': 'true' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    signal: AbortSignal.timeout(20_000),
  })
  return { status: response.status, json: (await response.json()) as Record<string, any> }
}

async function conditions(): Promise<Record<string, any>[]> {
  const response = await fetch(`${gateway.url}/api/adaptive-routing/conditions`)
  return ((await response.json()) as { conditions: Record<string, any>[] }).conditions
}

/** Sends a request every 300 ms until the hold shows a check, within a generous deadline; the requests sent. */
async function untilChecked(deadlineMs: number): Promise<number> {
  const until = Date.now() + deadlineMs
  let sent = 0
  while (Date.now() < until) {
    await chat()
    sent++
    if ((await conditions())[0]?.checks > 0) return sent
    await new Promise((resolve) => setTimeout(resolve, 300))
  }
  throw new Error(`no check of the held key within ${deadlineMs} ms`)
}

/** The request log's entries of this gateway marked as a check of the limited key, once the batches land. */
async function checksLogged(atLeast: number): Promise<Record<string, any>[]> {
  const until = Date.now() + 15_000
  for (;;) {
    const response = await fetch(`${gateway.url}/api/logs?check=true&limit=100`)
    const logs = ((await response.json()) as { logs: Record<string, any>[] }).logs
    if (logs.length >= atLeast || Date.now() > until) return logs
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

describe('the ladder of a rate-limited key', () => {
  it("stays on its first rung through one request's retries and the requests sent anyway; the failed check moves it up one rung", async () => {
    await simulator.setRules([{ key: LIMITED, fault: RATE_LIMITED_NO_WAIT }])
    const first = await chat()
    expect(first.status).toBe(429)
    // One request: the refusal that held the key, then its max_retries retries on it, all refused.
    expect(first.json.extra_fields.attempts.map((attempt: { key_name: string; status: number }) => `${attempt.key_name}:${attempt.status}`)).toEqual(['limited:429', 'limited:429', 'limited:429', 'limited:429'])
    expect(await conditions()).toEqual([expect.objectContaining({ key_name: 'limited', model: 'gpt-4o-mini', reason: 'rate_limit', rung: 0, checks: 0 })])
    const [placed] = await conditions()
    // Requests sent anyway while the only key is held and not yet due: one attempt each, nothing moves.
    for (let index = 0; index < 3; index++) {
      const anyway = await chat()
      expect(anyway.status).toBe(429)
      expect(anyway.json.extra_fields.attempts).toHaveLength(1)
      expect(anyway.json.extra_fields.routing_log.join('\n')).toMatch(/its check is not due yet/)
    }
    expect(await conditions()).toEqual([expect.objectContaining({ rung: 0, checks: 0, since: placed!.since, next_check_at: placed!.next_check_at })])

    // The ladder's first wait (30 s, +-10 %) runs out: the check is refused again, one rung up, and only one.
    await untilChecked(60_000)
    expect(await conditions()).toEqual([expect.objectContaining({ key_name: 'limited', reason: 'rate_limit', rung: 1, checks: 1, since: placed!.since })])
    // Right after it, more requests are sent anyway: the new wait is not due, so the rung stays.
    for (let index = 0; index < 3; index++) await chat()
    expect(await conditions()).toEqual([expect.objectContaining({ rung: 1, checks: 1 })])
    // The request log marks exactly one request as the key's check: the one that was refused again.
    const logged = await checksLogged(1)
    expect(logged.map((entry) => entry.routing.check)).toEqual([expect.objectContaining({ key_name: 'limited', outcome: 'refused_again' })])
  }, 120_000)
})
