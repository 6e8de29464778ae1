/**
 * What the first-chunk gate (issue 35) adds to a healthy stream: two Switchboard checkouts
 * (A, B) and the simulator itself, one request at a time, taking turns request by request so
 * that whatever else the machine does weighs on all three alike. For each: the time from
 * sending the request to the answer's first body byte, and to its first content (the first
 * event carrying text), p50 and p99, and what each gateway adds over the simulator direct.
 *
 *   node --import tsx bench/data-plane/first-token.ts --a <checkout> --b <checkout> [--requests 2000]
 *        [--chunk-delay 0] (the simulator's delay between stream events, ms)
 *
 * A checkout is a directory with packages/gateway/bin/switchboard.js (default: this one). Each
 * gateway gets its own database on one private embedded PostgreSQL, one openai key and the
 * request model `openai/gpt-4o-mini`, as in ab.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import pg from 'pg'
import { freePort, startPrivateServer } from '@switchboard/test-kit'
import { startService, stopAll, waitUntilReady, killAllNow } from '../lib/processes.mjs'
import { startSimulator, UPSTREAM_KEY } from '../lib/targets.mjs'

/** bench/: results/ and README.md live here. */
const here = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({
  options: {
    a: { type: 'string', default: resolve(here, '..') },
    b: { type: 'string', default: resolve(here, '..') },
    requests: { type: 'string', default: '2000' },
    'chunk-delay': { type: 'string', default: '0' },
  },
})
const requests = Math.min(20_000, Math.max(10, Number(values.requests)))
const chunkDelay = Math.max(0, Number(values['chunk-delay']))
const resultsDir = join(here, 'results', 'first-token')
mkdirSync(resultsDir, { recursive: true })

interface Side {
  name: string
  url: string
  body: string
  firstByte: number[]
  firstContent: number[]
}

const agent = new Agent({ connections: 4, keepAliveTimeout: 60_000 })

/** One stream, read to its end: ms to its first body byte and to its first content. */
async function once(side: Side): Promise<void> {
  const started = performance.now()
  const answer = await request(side.url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` }, body: side.body, dispatcher: agent })
  let firstByte = -1
  let firstContent = -1
  let text = ''
  for await (const chunk of answer.body) {
    const now = performance.now()
    if (firstByte < 0) firstByte = now - started
    if (firstContent < 0) {
      text += chunk.toString()
      if (/"content":"[^"]/.test(text)) firstContent = now - started
    }
  }
  if (answer.statusCode !== 200 || firstContent < 0) throw new Error(`${side.name}: ${answer.statusCode}, no content in ${text.slice(0, 200)}`)
  side.firstByte.push(firstByte)
  side.firstContent.push(firstContent)
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

const database = await startPrivateServer('first-token')
process.on('SIGINT', () => { killAllNow(); void database.dispose().then(() => process.exit(130)) })
try {
  const upstream = await startSimulator({ resultsDir, name: 'first-token' })
  if (chunkDelay > 0) {
    const set = await fetch(`${upstream.origin}/_sim/rules`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify([{ chunk_delay_ms: chunkDelay }]) })
    if (set.status !== 200) throw new Error(`simulator rules: ${set.status}`)
  }
  const chat = (model: string) => JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] })
  const sides: Side[] = [{ name: 'direct', url: `${upstream.origin}/v1/chat/completions`, body: chat('gpt-4o-mini'), firstByte: [], firstContent: [] }]
  const admin = new pg.Client({ connectionString: database.handle.url })
  await admin.connect()
  for (const [name, checkout] of [['A', values.a], ['B', values.b]] as const) {
    await admin.query(`CREATE DATABASE first_token_${name.toLowerCase()}`)
    const url = new URL(database.handle.url)
    url.pathname = `/first_token_${name.toLowerCase()}`
    const configFile = join(resultsDir, `${name}.config.json`)
    writeFileSync(configFile, JSON.stringify({ providers: { openai: { keys: [{ name: 'k1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: { base_url: upstream.origin } } } }, null, 2))
    const port = await freePort()
    const service = startService({
      name: `switchboard-${name}`,
      args: [join(checkout, 'packages/gateway/bin/switchboard.js'), 'serve', '--config', configFile, '--port', String(port), '--host', '127.0.0.1', '--p2p-port', '0', '--database-url', url.toString()],
      cwd: checkout,
      env: { NODE_ENV: 'production' },
      logFile: join(resultsDir, `${name}.log`),
      graceMs: 15_000,
    })
    const origin = `http://127.0.0.1:${port}`
    await waitUntilReady(service, async () => (await fetch(`${origin}/health`).catch(() => null))?.status === 200, { timeoutMs: 120_000, intervalMs: 250 })
    sides.push({ name, url: `${origin}/v1/chat/completions`, body: chat('openai/gpt-4o-mini'), firstByte: [], firstContent: [] })
  }
  await admin.end()
  // Warm-up, then the measured turns: direct, A, B, request by request.
  for (let index = 0; index < 200; index++) for (const side of sides) await once(side)
  for (const side of sides) {
    side.firstByte = []
    side.firstContent = []
  }
  for (let index = 0; index < requests; index++) for (const side of sides) await once(side)
  const direct = sides[0]!
  console.log(`\n${requests} streams each, one at a time, simulator chunk delay ${chunkDelay} ms (ms):\n`)
  console.log('| target | first byte p50 | first byte p99 | first content p50 | first content p99 | added to first content, p50 / p99 |')
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |')
  for (const side of sides) {
    const added = side === direct ? '' : `${(quantile(side.firstContent, 0.5) - quantile(direct.firstContent, 0.5)).toFixed(3)} / ${(quantile(side.firstContent, 0.99) - quantile(direct.firstContent, 0.99)).toFixed(3)}`
    const label = side.name === 'direct' ? 'simulator direct' : `${side.name} (${side.name === 'A' ? values.a : values.b})`
    console.log(`| ${label} | ${quantile(side.firstByte, 0.5).toFixed(3)} | ${quantile(side.firstByte, 0.99).toFixed(3)} | ${quantile(side.firstContent, 0.5).toFixed(3)} | ${quantile(side.firstContent, 0.99).toFixed(3)} | ${added} |`)
  }
} finally {
  await agent.close()
  await stopAll()
  await database.dispose()
}
