/**
 * Time to interactive of the dashboard with 24 h of a busy fleet's history (issue 16), in a
 * real Chromium (@sparticuz/chromium + playwright-core), on this machine.
 *
 *   node --import tsx bench/reading/dashboard/tti.ts [--loads 7] [--no-readme]     # from the repository root
 *
 * A fresh database on the embedded Postgres gets `seed.ts`'s day; one gateway node starts on
 * it (its own process, loopback, no admin tokens); then Chromium loads `/` (the dashboard,
 * last 24 h) `--loads` times, each in a new tab, after one warm-up load. Per load:
 * - figures: navigation start until the four figures and the Held Keys card are on the page
 *   (each panel draws as its own API answer arrives; the timeline may still be loading);
 * - drawn: until the timeline's rows are there too;
 * - interactive: the later of drawn and the end of the last long task (> 50 ms) the page ran
 *   (PerformanceObserver 'longtask'), i.e. when the main thread is free to answer input;
 * - click: a click on the Incidents figure until its breakdown is on the page.
 * Bounded: every wait has a deadline; the node and the browser are stopped at the end.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import chromium from '@sparticuz/chromium'
import { chromium as playwright } from 'playwright-core'
import { createPool, ensureDatabase, migrate } from '@switchboard/store'
import { freePort, freshDatabase } from '@switchboard/test-kit'
import { seedBusyDay, seededConfig } from './seed.ts'

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const { values } = parseArgs({ options: { loads: { type: 'string', default: '7' }, 'no-readme': { type: 'boolean', default: false } } })
const loads = Math.min(20, Math.max(1, Number(values.loads)))

const server = await ensureDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: join(root, '.switchboard', 'postgres') })
const url = await freshDatabase(server.url, 'switchboard_bench_dashboard')
const pool = createPool({ url, max: 4 })
await migrate(pool)
const seededAt = Date.now()
const seedStarted = performance.now()
const rows = await seedBusyDay(pool, seededAt)
const seedSeconds = (performance.now() - seedStarted) / 1000
await pool.query('ANALYZE')
await pool.end()
console.log(`seeded 24 h in ${seedSeconds.toFixed(1)} s:`, rows)

const dir = await mkdtemp(join(tmpdir(), 'sb-bench-dashboard-'))
const configFile = join(dir, 'config.json')
await writeFile(configFile, JSON.stringify(seededConfig()))
const port = await freePort()
const node = spawn(process.execPath, [join(root, 'packages/gateway/bin/switchboard.js'), 'serve', '--config', configFile, '--port', String(port)], {
  cwd: root,
  env: { ...process.env, SWITCHBOARD_DATABASE_URL: url, SWITCHBOARD_NODE_ID: 'node-1', SWITCHBOARD_REGION: 'eu', SWITCHBOARD_DATA_DIR: join(dir, 'node'), SWITCHBOARD_EXIT_WITH_PARENT: '1', LOG_LEVEL: 'info' },
  stdio: ['ignore', 'pipe', 'pipe'],
})
let output = ''
node.stdout.on('data', (data: Buffer) => (output += data.toString()))
node.stderr.on('data', (data: Buffer) => (output += data.toString()))
const base = `http://127.0.0.1:${port}`
const deadline = Date.now() + 60_000
while (!output.includes('switchboard listening on')) {
  if (Date.now() > deadline || node.exitCode !== null) throw new Error(`the node did not start:\n${output.slice(-3000)}`)
  await new Promise((resolveWait) => setTimeout(resolveWait, 100))
}

const browser = await playwright.launchPersistentContext(await mkdtemp(join(tmpdir(), 'sb-bench-chromium-')), {
  executablePath: await chromium.executablePath(),
  headless: true,
  viewport: { width: 1400, height: 900 },
  locale: 'en-GB',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
})
interface Load { firstDrawn: number; drawn: number; interactive: number; click: number; longTasks: number; api: Record<string, number>; apiSent: number; apiRequests: number; timelineRows: number; incidents: number }
async function load(): Promise<Load> {
  const page = await browser.newPage()
  await page.addInitScript(() => {
    const tasks: { start: number; end: number }[] = []
    ;(window as unknown as { __longTasks: typeof tasks }).__longTasks = tasks
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) tasks.push({ start: entry.startTime, end: entry.startTime + entry.duration })
    }).observe({ type: 'longtask', buffered: true })
  })
  await page.goto(`${base}/#/dashboard?window=24h&live=0`, { waitUntil: 'commit' })
  // Polled inside the page, so each time is the page's own clock when the element appeared.
  // (A string, not a function: tsx would name the inner function with a helper the page lacks.)
  const appeared = (selector: string) => page.evaluate(`new Promise((resolveTime) => {
    const look = () => (document.querySelector(${JSON.stringify(selector)}) ? resolveTime(performance.now()) : requestAnimationFrame(look))
    look()
  })`) as Promise<number>
  const [figures, held, timeline] = await Promise.all([appeared('[data-testid="figure-incidents"]'), appeared('[data-testid="held-keys"][aria-busy="false"]'), appeared('[data-testid="timeline-row"]')])
  const firstDrawn = Math.max(figures, held)
  const drawn = Math.max(firstDrawn, timeline)
  // Let any work the render queued finish, then read the long tasks.
  await page.waitForTimeout(300)
  const measured = await page.evaluate(() => {
    const tasks = (window as unknown as { __longTasks: { start: number; end: number }[] }).__longTasks
    const api: Record<string, number> = {}
    let apiSent = Infinity
    let apiRequests = 0
    for (const entry of performance.getEntriesByType('resource') as PerformanceResourceTiming[]) {
      const path = new URL(entry.name).pathname
      if (!path.startsWith('/api/')) continue
      apiRequests++
      api[path] = Math.round(entry.responseEnd - entry.startTime)
      apiSent = Math.min(apiSent, entry.startTime)
    }
    return { tasks, api, apiSent, apiRequests, rows: document.querySelectorAll('[data-testid="timeline-row"]').length, incidents: document.querySelectorAll('[data-testid="incident-bar"]').length }
  })
  const lastLongTask = Math.max(0, ...measured.tasks.map((task) => task.end))
  const clickStart = await page.evaluate(() => performance.now())
  await page.click('[data-testid="figure-incidents"]')
  await page.waitForSelector('[data-testid="breakdown"]', { timeout: 10_000 })
  const clickEnd = await page.evaluate(() => performance.now())
  await page.close()
  return { firstDrawn, drawn, interactive: Math.max(drawn, lastLongTask), click: clickEnd - clickStart, longTasks: measured.tasks.length, api: measured.api, apiSent: measured.apiSent, apiRequests: measured.apiRequests, timelineRows: measured.rows, incidents: measured.incidents }
}

try {
  await load()
  const results: Load[] = []
  for (let index = 0; index < loads; index++) results.push(await load())
  const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]!
  const max = (numbers: number[]) => Math.max(...numbers)
  const pick = (name: keyof Load) => results.map((result) => result[name] as number)
  const apiPaths = Object.keys(results[0]!.api).sort()
  const date = new Date().toISOString().slice(0, 10)
  const table = [
    `Command: \`node --import tsx bench/reading/dashboard/tti.ts --loads ${loads}\` (${date}, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(2)} at the end; shared machine).`,
    `Seeded: 24 h of 3 nodes, 60 routes + 15 directions (${rows.snapshots} snapshots, ${rows.counts} per-minute counts, ${rows.events} events, ${rows.episodes} episodes); the page drew ${results[0]!.timelineRows} timeline rows and ${results[0]!.incidents} incident bars.`,
    '',
    '| measure (ms, from navigation start) | median | max |',
    '| --- | ---: | ---: |',
    `| first API request sent (page and modules loaded, first render) | ${median(pick('apiSent')).toFixed(0)} | ${max(pick('apiSent')).toFixed(0)} |`,
    `| figures and Held Keys on the page (the timeline still loading) | ${median(pick('firstDrawn')).toFixed(0)} | ${max(pick('firstDrawn')).toFixed(0)} |`,
    `| drawn: figures, timeline and Held Keys on the page | ${median(pick('drawn')).toFixed(0)} | ${max(pick('drawn')).toFixed(0)} |`,
    `| interactive: drawn, and no long task after it | ${median(pick('interactive')).toFixed(0)} | ${max(pick('interactive')).toFixed(0)} |`,
    `| click on a figure until its breakdown shows | ${median(pick('click')).toFixed(0)} | ${max(pick('click')).toFixed(0)} |`,
    `| long tasks (> 50 ms) per load, count | ${median(pick('longTasks'))} | ${max(pick('longTasks'))} |`,
    `| API requests per load, count (one per answer: the views use boot.js's) | ${median(pick('apiRequests'))} | ${max(pick('apiRequests'))} |`,
    ...apiPaths.map((path) => `| API \`${path}\` answered | ${median(results.map((result) => result.api[path] ?? 0))} | ${max(results.map((result) => result.api[path] ?? 0))} |`),
    '',
    `Target: interactive within 1000 ms. ${median(pick('interactive')) <= 1000 ? 'Met' : 'Missed'} at the median; max ${max(pick('interactive')).toFixed(0)} ms over ${loads} loads.`,
  ].join('\n')
  console.log(table)
  if (!values['no-readme']) {
    const readme = join(root, 'bench/README.md')
    const text = await readFile(readme, 'utf8')
    const block = `<!-- dashboard-tti:begin -->\n${table}\n<!-- dashboard-tti:end -->`
    const next = text.includes('<!-- dashboard-tti:begin -->') ? text.replace(/<!-- dashboard-tti:begin -->[\s\S]*<!-- dashboard-tti:end -->/, block) : `${text.trimEnd()}\n\n## Dashboard: time to interactive with 24 h of a busy fleet (issue 16)\n\n${block}\n`
    await writeFile(readme, next)
  }
} finally {
  await browser.close()
  node.kill('SIGTERM')
  await new Promise((resolveExit) => node.once('exit', resolveExit))
  await server.release()
}
