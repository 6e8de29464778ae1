/**
 * Idle RSS of a Switchboard node, process by process (issue 38, item 3): a node with 1 worker
 * and one with 2, each started as the frontier bench starts it (`switchboard serve`,
 * NODE_ENV=production, the request log off, `--p2p-port 0`, its database on a private embedded
 * PostgreSQL by `--database-url`, one openai key on frontier-mock.mjs), unpinned. For each
 * process of the node (the primary, each worker): VmRSS from /proc/<pid>/status after `--idle`
 * seconds idle, then the most seen while `--concurrency` plain chat completions are kept in
 * flight for `--seconds`, and again after `--idle` seconds more. With `--smaps`, also the
 * anonymous and file-backed parts of each idle RSS (/proc/<pid>/smaps_rollup).
 *
 *   npm run bench:idle-rss -- [--against <checkout>] [--workers 1,2] [--idle 5]
 *     [--concurrency 64] [--seconds 5] [--smaps]
 *
 * --against: another checkout's packages/gateway/bin/switchboard.js measured the same way, in
 * the same run and on the same database, after this one (A, then B, per worker count).
 * Nothing is written to the README; the table is printed.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import pg from 'pg'
import { freePort, startPrivateServer } from '@switchboard/test-kit'
import { killAllNow, logTail, startService, stopService, waitUntilReady } from '../lib/processes.mjs'
import { chatBody, UPSTREAM_KEY } from '../lib/targets.mjs'

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const resultsDir = join(benchDir, 'results', 'idle-rss')
mkdirSync(resultsDir, { recursive: true })
const { values } = parseArgs({
  options: {
    against: { type: 'string', default: '' },
    workers: { type: 'string', default: '1,2' },
    idle: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '5' },
    smaps: { type: 'boolean', default: false },
  },
})
const idleMs = Math.min(120, Math.max(0, Number(values.idle))) * 1000
const concurrency = Math.min(1024, Math.max(1, Number(values.concurrency)))
const loadMs = Math.min(120, Math.max(0.5, Number(values.seconds))) * 1000
const workerCounts = values.workers.split(',').map((text) => Math.min(8, Math.max(1, Number(text))))
const checkouts = [{ name: 'this', dir: resolve(benchDir, '..') }]
if (values.against) checkouts.push({ name: 'against', dir: resolve(values.against) })
for (const { dir } of checkouts) if (!existsSync(join(dir, 'packages/gateway/bin/switchboard.js'))) throw new Error(`no packages/gateway/bin/switchboard.js in ${dir}`)

/** /proc/<pid>/status's VmRSS (MB), or NaN once the process is gone. */
function rssOf(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : Number.NaN
  } catch {
    return Number.NaN
  }
}

/** smaps_rollup's anonymous and file-backed resident parts (MB). */
function smapsOf(pid: number): { anonymous: number; file: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN) / 1024
  return { anonymous: field('Anonymous'), file: field('Rss') - field('Anonymous') }
}

/** The node's processes: the one spawned, then its node children (the workers), by pid. */
function nodeProcesses(rootPid: number): { pid: number; role: string }[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[1]) === rootPid && stat.includes('(node')) children.push(Number(entry))
    } catch {
      // exited while we looked
    }
  }
  children.sort((a, b) => a - b)
  if (children.length === 0) return [{ pid: rootPid, role: 'node (its one worker)' }]
  return [{ pid: rootPid, role: 'primary' }, ...children.map((pid, index) => ({ pid, role: `worker ${index + 1}` }))]
}

const database = await startPrivateServer('idle-rss')
process.on('SIGINT', () => {
  killAllNow()
  void database.dispose().then(() => process.exit(130))
})
interface Row { checkout: string; workers: number; role: string; idle: number; load: number; after: number; anonymous?: number; file?: number }
const rows: Row[] = []
let mock: ReturnType<typeof startService> | undefined
try {
  const mockPort = await freePort()
  mock = startService({ name: 'mock', args: [join(benchDir, 'data-plane', 'frontier-mock.mjs'), '--port', String(mockPort)], cwd: benchDir, logFile: join(resultsDir, 'mock.log') })
  await waitUntilReady(mock, async () => logTail(mock!).includes('listening'))
  const mockOrigin = `http://127.0.0.1:${mockPort}`
  const configFile = join(resultsDir, 'switchboard.config.json')
  writeFileSync(configFile, `${JSON.stringify({
    providers: { openai: { keys: [{ name: 'k1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: { base_url: mockOrigin } } },
    request_log: { enabled: false },
  }, null, 2)}\n`)
  const admin = new pg.Client({ connectionString: database.handle.url })
  await admin.connect()
  await admin.query('CREATE DATABASE idle_rss')
  await admin.end()
  const databaseUrl = Object.assign(new URL(database.handle.url), { pathname: '/idle_rss' }).toString()
  const body = chatBody('openai/gpt-4o-mini', false)
  const headers = { 'content-type': 'application/json' }

  for (const workers of workerCounts) {
    for (const checkout of checkouts) {
      const port = await freePort()
      const url = `http://127.0.0.1:${port}/v1/chat/completions`
      const service = startService({
        name: `switchboard-${checkout.name}-${workers}`,
        args: [join(checkout.dir, 'packages/gateway/bin/switchboard.js'), 'serve', '--config', configFile, '--port', String(port), '--host', '127.0.0.1', '--p2p-port', '0', '--database-url', databaseUrl],
        env: { NODE_ENV: 'production', SWITCHBOARD_WORKERS: String(workers) },
        cwd: benchDir,
        logFile: join(resultsDir, `switchboard-${checkout.name}-${workers}.log`),
        graceMs: 15_000,
      })
      try {
        const probe = new Agent({ connections: 1 })
        await waitUntilReady(service, async () => logTail(service, 1_000_000).includes('switchboard listening on'), { timeoutMs: 120_000 })
        // one answered request, as frontier's idle figure is taken after its first served completion
        await waitUntilReady(service, async () => {
          const response = await request(url, { method: 'POST', headers, body, dispatcher: probe })
          await response.body.dump()
          return response.statusCode === 200
        }, { timeoutMs: 30_000 })
        await probe.close()
        await sleep(idleMs)
        const processes = nodeProcesses(service.pid!)
        if (processes.length !== (workers > 1 ? workers + 1 : 1)) throw new Error(`expected ${workers} worker(s), found ${processes.length} node processes`)
        const found = processes.map(({ pid, role }) => ({ pid, role, idle: rssOf(pid), load: 0, ...(values.smaps ? smapsOf(pid) : {}) }))
        const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 60_000 })
        const end = performance.now() + loadMs
        let completed = 0
        let failed = 0
        const sample = () => { for (const entry of found) entry.load = Math.max(entry.load, rssOf(entry.pid)) }
        const ticker = setInterval(sample, 250)
        await Promise.all(Array.from({ length: concurrency }, async () => {
          while (performance.now() < end) {
            try {
              const response = await request(url, { method: 'POST', headers, body, dispatcher })
              await response.body.dump()
              if (response.statusCode === 200) completed += 1
              else failed += 1
            } catch {
              failed += 1
            }
          }
        }))
        clearInterval(ticker)
        sample()
        await dispatcher.close()
        await sleep(idleMs)
        console.log(`${checkout.name}, ${workers} worker(s): ${completed} requests answered, ${failed} failed, in ${loadMs / 1000} s at ${concurrency} in flight`)
        for (const entry of found) rows.push({ checkout: checkout.name, workers, role: entry.role, idle: entry.idle, load: entry.load, after: rssOf(entry.pid), ...('anonymous' in entry ? { anonymous: entry.anonymous, file: entry.file } : {}) })
      } finally {
        await stopService(service)
      }
    }
  }
} finally {
  if (mock) await stopService(mock)
  await database.dispose()
}

const mb = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? '' : value.toFixed(1))
const smaps = values.smaps ? ' anonymous / file-backed idle MB |' : ''
console.log(`\nIdle ${idleMs / 1000} s after the first answered request; load: ${concurrency} plain completions in flight for ${loadMs / 1000} s (the most seen, sampled every 250 ms); after: ${idleMs / 1000} s after the load.\n`)
console.log(`| checkout | workers | process | RSS idle MB | RSS under load MB | RSS after MB |${smaps}`)
console.log(`| --- | ---: | --- | ---: | ---: | ---: |${values.smaps ? ' ---: |' : ''}`)
for (const row of rows) console.log(`| ${row.checkout} | ${row.workers} | ${row.role} | ${mb(row.idle)} | ${mb(row.load)} | ${mb(row.after)} |${values.smaps ? ` ${mb(row.anonymous)} / ${mb(row.file)} |` : ''}`)
for (const checkout of checkouts) {
  for (const workers of workerCounts) {
    const of = rows.filter((row) => row.checkout === checkout.name && row.workers === workers)
    if (of.length === 0) continue
    const sum = (key: 'idle' | 'load') => of.reduce((total, row) => total + row[key], 0)
    console.log(`- ${checkout.name}, ${workers} worker(s): ${mb(sum('idle'))} MB idle in all (${mb(sum('idle') / workers)} per worker), ${mb(sum('load'))} MB under load`)
  }
}
