/**
 * An outage shorter than a snapshot interval, on the timeline (issue 36, item 2): a real gateway
 * process on the simulator, snapshots every SNAPSHOT_MS (much longer than routing's 5 s
 * recompute). Between two snapshots the primary provider fails, recovers, fails again and
 * recovers (failed -> recovering -> failed -> recovering), so the snapshot after it catches the
 * route recovering. The timeline API must still answer failed for that stretch, with every
 * failed attempt counted, and the dashboard, in a real Chromium, must draw that dot red with
 * the count in its title. A snapshot of the state at one instant (the code before) answered
 * recovering and counted nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from '../../gateway/test/harness.ts'
import { launchBrowser, type TestBrowser } from './browser.ts'

const TOKEN = 'timeline-outage-update-token-0123456789'
const PRIMARY = { id: 'primary-key', value: 'sk-outage-primary-5151', suffix: '5151' }
const ROUTE = `route:openai:gpt-4o:${PRIMARY.id}`
const DIRECTION = 'direction:openai:gpt-4o'
/** Far longer than the 5 s recompute and than the flapping below takes, so it fits between two snapshots. */
const SNAPSHOT_MS = 30_000
/** One request every TICK_MS naming the primary with the backup as its fallback. */
const TICK_MS = 100

let simulator: SimulatorProcess
let gateway: GatewayProcess
let browser: TestBrowser
let traffic: { stop(): Promise<void> }

/** The admin API of the gateway (answers of many shapes, read loosely: hence any). */
async function admin(path: string): Promise<any> {
  const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return response.json()
}

/** Waits until `read()` gives a value `done` accepts; bounded by `timeoutMs`. */
async function until<Value>(read: () => Promise<Value>, done: (value: Value) => boolean, what: string, timeoutMs = 30_000): Promise<Value> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}; last: ${JSON.stringify(value)?.slice(0, 2000)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

interface Point {
  at: string
  state: string
  requests: number
  errors: number
}

/** The route's snapshots (one node), oldest first. */
const points = async (): Promise<Point[]> => ((await admin(`/api/adaptive-routing/history/scores?entity=${encodeURIComponent(ROUTE)}`)).series[0]?.points ?? []) as Point[]
/** The primary route's state now. */
const primaryState = async (): Promise<string | undefined> => ((await admin('/api/adaptive-routing/routes')).routes as { key_id: string; model: string; state: string }[]).find((route) => route.key_id === PRIMARY.id && route.model === 'gpt-4o')?.state
/** The first snapshot taken after `afterMs`. */
const pointAfter = async (afterMs: number): Promise<Point> => (await until(points, (list) => list.some((point) => Date.parse(point.at) > afterMs), 'the next snapshot', SNAPSHOT_MS + 30_000)).find((point) => Date.parse(point.at) > afterMs)!

/** Sends one request every TICK_MS until stopped. */
function sendTraffic() {
  const pending = new Set<Promise<unknown>>()
  const timer = setInterval(() => {
    const request = fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o', fallbacks: ['azure/gpt-4o'], messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(10_000),
    })
      .then((response) => response.arrayBuffer())
      .catch(() => undefined)
      .finally(() => pending.delete(request))
    pending.add(request)
  }, TICK_MS)
  return {
    async stop() {
      clearInterval(timer)
      await Promise.all(pending)
    },
  }
}

/** What the outage left: the snapshot after it, and the 503s the primary answered in it. */
let outage: { snapshot: Point; failures: number }

/**
 * Right after a snapshot: the primary fails twice and recovers twice. Returns null when a
 * snapshot was taken meanwhile (a slow machine), so the caller tries again after it.
 */
async function flapBetweenSnapshots(): Promise<{ snapshot: Point; failures: number } | null> {
  // The first snapshot, or (trying again) the next one: either has just been taken.
  const list = await points()
  const fresh = await pointAfter(list.length === 0 ? 0 : Date.parse(list[list.length - 1]!.at))
  const startedAt = Date.now()
  await simulator.resetRequests()
  for (let flap = 0; flap < 2; flap++) {
    await simulator.setRules([{ provider: 'openai', key: PRIMARY.value, fault: 'unavailable' }])
    await until(primaryState, (state) => state === 'failed', 'the primary to fail')
    await simulator.setRules([])
    await until(primaryState, (state) => state === 'recovering' || state === 'healthy', 'the primary to recover')
  }
  const recoveredAt = Date.now()
  console.log(`the primary failed and recovered twice in ${recoveredAt - startedAt} ms, starting ${startedAt - Date.parse(fresh.at)} ms after a snapshot`)
  const failures = (await simulator.requests()).filter((request) => request.key_suffix === PRIMARY.suffix && request.status === 503).length
  const snapshot = await pointAfter(Date.parse(fresh.at))
  if (Date.parse(snapshot.at) <= recoveredAt) return null
  return { snapshot, failures }
}

beforeAll(async () => {
  ;[simulator, browser] = await Promise.all([startSimulator(), launchBrowser()])
  const network = { base_url: simulator.url, max_retries: 0 }
  gateway = await startGateway(
    {
      providers: {
        openai: { keys: [{ id: PRIMARY.id, name: 'primary', value: PRIMARY.value, models: ['gpt-4o'], weight: 1 }], network_config: network },
        azure: { keys: [{ name: 'backup', value: 'azure-outage-backup-5252', models: ['gpt-4o'], weight: 1 }], network_config: network },
      },
      load_balancer_config: { reroute_failed_directions: true },
    },
    { SWITCHBOARD_HISTORY_SNAPSHOT_MS: String(SNAPSHOT_MS), SWITCHBOARD_ADMIN_TOKENS: `${TOKEN}:update`, LOG_LEVEL: 'warn' },
  )
  traffic = sendTraffic()
  for (let attempt = 0; attempt < 3; attempt++) {
    const seen = await flapBetweenSnapshots()
    if (seen !== null) {
      outage = seen
      break
    }
  }
  await traffic.stop()
  if (outage === undefined) throw new Error('a snapshot fell inside the outage three times over')
}, 300_000)

afterAll(async () => {
  const errors = browser?.errors() ?? []
  await traffic?.stop()
  await browser?.close()
  await gateway?.stop()
  await simulator?.stop()
  expect(errors).toEqual([])
}, 60_000)

describe('an outage between two snapshots', () => {
  it('reads failed in the snapshot after it and in its timeline bucket, with every failed attempt counted', async () => {
    const { snapshot, failures } = outage
    expect(failures).toBeGreaterThanOrEqual(2)
    // The snapshot holds the worst state since the one before, not the instant's (recovering).
    expect(snapshot).toMatchObject({ state: 'failed', errors: failures })
    expect(snapshot.requests).toBeGreaterThanOrEqual(failures)
    // The timeline in 1 s buckets: the snapshot's bucket, on the key's row and the direction's.
    const at = Date.parse(snapshot.at)
    const bucketAt = new Date(Math.floor(at / 1000) * 1000).toISOString()
    const timeline = await admin(`/api/adaptive-routing/history/timeline?from=${Math.floor(at / 1000) - 60}&to=${Math.ceil(at / 1000) + 1}&bucket_seconds=1`)
    const direction = timeline.rows.find((row: { entity: string }) => row.entity === DIRECTION)
    const key = direction.keys.find((row: { entity: string }) => row.entity === ROUTE)
    for (const row of [key, direction]) {
      expect(row.buckets.find((bucket: { at: string }) => bucket.at === bucketAt), row.entity).toMatchObject({ state: 'failed', failed: failures, share: 1, nodes: 1 })
    }
  })

  it('is drawn red on the dashboard, with its failures in the dot\'s title', async () => {
    const minute = new Date(Math.floor(Date.parse(outage.snapshot.at) / 60_000) * 60_000).toISOString()
    // The figures the page draws come from the same API: its 1 h timeline, in minutes.
    const answer = await admin(`/api/adaptive-routing/history/timeline?from=${Math.floor(Date.now() / 1000) - 3600}&to=${Math.floor(Date.now() / 1000)}`)
    expect(answer.bucket_seconds).toBe(60)
    const direction = answer.rows.find((row: { entity: string }) => row.entity === DIRECTION)
    const expected = direction.keys[0].buckets.find((bucket: { at: string }) => bucket.at === minute)
    expect(expected).toMatchObject({ state: 'failed' })
    expect(expected.failed).toBeGreaterThanOrEqual(outage.failures)

    const page = await browser.open(`${gateway.url}/#/dashboard?window=1h&live=0`, { token: TOKEN })
    const row = page.locator(`[data-testid="timeline-row"][data-entity="${DIRECTION}"]`)
    await row.waitFor({ timeout: 20_000 })
    expect(await row.locator(`.tl-dot[data-at="${minute}"]`).getAttribute('data-state')).toBe('failed')
    await row.getByRole('button', { expanded: false }).click()
    const dot = page.locator(`[data-testid="timeline-key"][data-entity="${ROUTE}"] .tl-dot[data-at="${minute}"]`)
    await dot.waitFor()
    expect(await dot.getAttribute('data-state')).toBe('failed')
    expect(await dot.getAttribute('class')).toContain('s-failed')
    expect(Number(await dot.getAttribute('data-failed'))).toBe(expected.failed)
    expect(await dot.getAttribute('title')).toContain(`Failed at worst, on the only node reporting; ${expected.failed} of ${expected.requests} attempts failed`)
    // Its stretch says the same in words.
    await dot.click()
    expect(await page.getByTestId('stretch-failures').textContent()).toBe(`${expected.failed} of ${expected.requests} attempts failed.`)
    // The key was never held: no Held badge on its row.
    expect(await page.locator(`[data-testid="timeline-key"][data-entity="${ROUTE}"]`).getByTestId('timeline-held').count()).toBe(0)
    await page.close()
  })
})
