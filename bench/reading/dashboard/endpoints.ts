/**
 * The history endpoints the dashboard reads on load (summary, timeline) and on a chart click
 * (scores), timed server side over `seed.ts`'s busy 24 h (issue 16), in this process, with
 * no browser: wall time and this process's CPU time per answer, median of `--runs`.
 *
 *   node --import tsx bench/reading/dashboard/endpoints.ts [--runs 7]     # from the repository root
 *
 * Postgres work shows in the wall time only (it runs in its own process).
 */
import { cpus, loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createPool, ensureDatabase, migrate } from '@switchboard/store'
import { createHistoryQueries } from '@switchboard/history'
import { freshDatabase } from '@switchboard/test-kit'
import { seedBusyDay } from './seed.ts'

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const { values } = parseArgs({ options: { runs: { type: 'string', default: '7' } } })
const runs = Math.min(50, Math.max(1, Number(values.runs)))

const server = await ensureDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: join(root, '.switchboard', 'postgres') })
const url = await freshDatabase(server.url, 'switchboard_bench_dashboard_endpoints')
const pool = createPool({ url, max: 4 })
try {
  await migrate(pool)
  const seededAt = Date.now()
  const rows = await seedBusyDay(pool, seededAt)
  await pool.query('ANALYZE')
  console.log('seeded:', rows)
  const queries = createHistoryQueries({ pool, now: () => seededAt, keyName: () => undefined, settings: () => ({}) })
  const to = Math.floor(seededAt / 1000)
  const cases: [string, () => Promise<unknown>][] = [
    ['summary 24 h', () => queries.summary(new URLSearchParams({ from: String(to - 86_400), to: String(to) }))],
    ['timeline 1 h', () => queries.timeline(new URLSearchParams({ from: String(to - 3_600), to: String(to) }))],
    ['timeline 6 h', () => queries.timeline(new URLSearchParams({ from: String(to - 6 * 3_600), to: String(to) }))],
    ['timeline 24 h', () => queries.timeline(new URLSearchParams({ from: String(to - 86_400), to: String(to) }))],
    ['timeline 24 h, openai only', () => queries.timeline(new URLSearchParams({ from: String(to - 86_400), to: String(to), providers: 'openai' }))],
    ['scores 24 h, one route', () => queries.scores(new URLSearchParams({ from: String(to - 86_400), to: String(to), entity: 'route:openai:gpt-4o:openai-k2' }))],
  ]
  const lines = ['| answer (24 h busy day) | wall ms, median | wall ms, max | Node CPU ms, median |', '| --- | ---: | ---: | ---: |']
  for (const [name, run] of cases) {
    await run()
    const walls: number[] = []
    const cpuTimes: number[] = []
    for (let index = 0; index < runs; index++) {
      const cpu = process.cpuUsage()
      const started = performance.now()
      await run()
      walls.push(performance.now() - started)
      const used = process.cpuUsage(cpu)
      cpuTimes.push((used.user + used.system) / 1000)
    }
    const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]!
    lines.push(`| ${name} | ${median(walls).toFixed(0)} | ${Math.max(...walls).toFixed(0)} | ${median(cpuTimes).toFixed(0)} |`)
  }
  console.log(`${runs} runs each (${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(2)})`)
  console.log(lines.join('\n'))
} finally {
  await pool.end()
  await server.release()
}
