/**
 * The issues API over 7 days of a busy fleet's history (issue 14): 10 nodes in 2 regions,
 * 20 providers x 50 keys, a rough day every day (a revoked key held all day on every node, a
 * key out of credit, a failing provider with all 50 of its keys failing, 30 short rate
 * limits, 200 one-node blips), synthesized straight into Postgres (episodes, nodes, and the
 * events the detail view reads), then the paged queries the Incidents page sends, timed
 * through `createHistoryQueries` (what GET /api/adaptive-routing/history/issues runs).
 *
 *   node --import tsx bench/reading/history-issues.ts [--iterations 30] [--no-readme]
 *
 * Also times a node's first query (it groups the whole week) and the first query after a late
 * episode (its hour slice is regrouped), and checks the kept path answers what grouping the
 * whole week afresh answers.
 *
 * Uses its own embedded PostgreSQL under bench/results/history-issues/ (or DATABASE_URL).
 */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { availableParallelism, loadavg } from 'node:os'
import { readFileSync } from 'node:fs'
import { answerIssues, createDayPartitions, createHistoryQueries, insertRows, parseIssueFilters, type Episode, type HistoryEvent, type IssuesAnswer } from '@switchboard/history'
import { createIncidentSource } from '../../packages/history/src/queries/incidents.ts'
import { parseWindow } from '../../packages/history/src/queries/params.ts'
import { upsertEpisodes } from '../../packages/history/src/recorder/tables.ts'
import { eventColumns } from '../../packages/history/src/recorder/tables.ts'
import { newEpisode } from '../../packages/history/src/tracker/episodes.ts'
import type { Stamped } from '../../packages/history/src/tracker/types.ts'
import { createBenchDatabase, dropBenchDatabase, openBenchServer } from '../lib/database.ts'
import { seededRandom as prng } from '@switchboard/test-kit'
import { replaceSection } from '../lib/report.mjs'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({ options: { iterations: { type: 'string', default: '30' }, 'no-readme': { type: 'boolean', default: false } } })
const iterations = Math.min(500, Math.max(5, Number(values.iterations)))

const DAY = 86_400_000
const MINUTE = 60_000
const NODES = Array.from({ length: 10 }, (_, index) => ({ id: `node-${index + 1}`, region: index < 5 ? 'eu' : 'us' }))
const PROVIDERS = Array.from({ length: 20 }, (_, index) => `provider-${index + 1}`)
const KEYS = Array.from({ length: 50 }, (_, index) => `key-${index + 1}`)
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4-5']

const benchKeyName = (_provider: string, keyId: string) => `name-${keyId}`

/** The machine's CPU time so far (/proc/stat, in ticks): busy and total. */
function machineCpu(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = fields.slice(0, 8).reduce((sum, value) => sum + value, 0)
  return { busy: total - fields[3]! - fields[4]!, total }
}

let sequence = 0
/** A bench episode: the tracker's new episode, failed and moving traffic unless told otherwise, closed when `closedAt` is set. */
function episode(node: (typeof NODES)[number], fields: Partial<Episode> & Pick<Episode, 'entity' | 'scope' | 'provider' | 'openedAt' | 'closedAt'>): Stamped<Episode> {
  const opened = newEpisode({ id: `${node.id}:${(sequence++).toString(36)}`, entity: fields.entity, provider: fields.provider, models: [], keyIds: [], cause: fields.cause ?? 'state', openedAt: fields.openedAt })
  return { ...opened, phase: fields.closedAt === null ? 'failed' : 'closed', updatedAt: fields.closedAt ?? fields.openedAt, worstState: 'failed', action: 'moved_traffic', ...fields, nodeId: node.id, region: node.region }
}

async function seed(pool: import('pg').Pool, now: number): Promise<{ episodes: number; events: number }> {
  const random = prng(14)
  const start = now - 7 * DAY
  await createDayPartitions(pool, ['history_events', 'history_snapshots', 'history_counts'], { fromMs: now, daysBehind: 8, daysAhead: 1 })
  const episodes: Stamped<Episode>[] = []
  const events: Stamped<HistoryEvent>[] = []
  const hold = (node: (typeof NODES)[number], at: number, entity: string, provider: string, model: string | null, keyId: string, kind: HistoryEvent['kind'], detail: Record<string, unknown>) =>
    events.push({ at, kind, entity, provider, model, keyId, detail, nodeId: node.id, region: node.region })
  for (let day = 0; day < 7; day++) {
    const dayStart = start + day * DAY
    const last = day === 6
    // A revoked key, held all day on every node, checked every 15 minutes; edited at the end of the day (not on the last).
    const revokedProvider = PROVIDERS[day % 20]!
    const revokedKey = KEYS[day % 50]!
    const revokedOpen = dayStart + 2 * 3_600_000
    const revokedClose = last ? null : dayStart + 20 * 3_600_000
    NODES.forEach((node, index) => {
      const entity = `key:${revokedProvider}:${revokedKey}`
      episodes.push(episode(node, { entity, scope: 'key', provider: revokedProvider, keyIds: [revokedKey], cause: 'hold', openedAt: revokedOpen + index * 50, closedAt: revokedClose, phase: revokedClose === null ? 'held' : 'closed', reasons: ['credential'], action: 'held', checks: 72, checkOutcomes: { refused_again: 72 }, sawRefusal: index === 0, message: 'Incorrect API key provided', releasedBy: revokedClose === null ? null : 'edit' }))
      hold(node, revokedOpen, entity, revokedProvider, null, revokedKey, 'hold:placed', { reason: 'credential', origin: index === 0 ? 'local' : 'peer' })
      for (let check = 0; check < 72; check++) hold(node, revokedOpen + check * 15 * MINUTE, entity, revokedProvider, null, revokedKey, 'hold:checked', { outcome: 'refused_again', rung: Math.min(5, check) })
    })
    // A key out of credit for an hour.
    const creditProvider = PROVIDERS[(day + 3) % 20]!
    const creditKey = KEYS[(day + 7) % 50]!
    const creditOpen = dayStart + 9 * 3_600_000
    NODES.forEach((node, index) => episodes.push(episode(node, { entity: `key:${creditProvider}:${creditKey}`, scope: 'key', provider: creditProvider, keyIds: [creditKey], cause: 'hold', openedAt: creditOpen + index * 40, closedAt: creditOpen + 3_600_000, reasons: ['quota'], action: 'held', checks: 4, sawRefusal: index === 0, releasedBy: 'check' })))
    // A failing provider: every key of one model fails for 6 hours on every node.
    const failingProvider = PROVIDERS[(day + 5) % 20]!
    const failingOpen = dayStart + 12 * 3_600_000
    for (const node of NODES) {
      episodes.push(episode(node, { entity: `direction:${failingProvider}:gpt-4o`, scope: 'direction', provider: failingProvider, models: ['gpt-4o'], keyIds: KEYS, openedAt: failingOpen + 5_000, closedAt: failingOpen + 6 * 3_600_000, reasons: ['transient'] }))
      for (const key of KEYS) {
        const entity = `route:${failingProvider}:gpt-4o:${key}`
        episodes.push(episode(node, { entity, scope: 'route', provider: failingProvider, models: ['gpt-4o'], keyIds: [key], openedAt: failingOpen + Math.floor(random() * 5_000), closedAt: failingOpen + 6 * 3_600_000 + Math.floor(random() * 20_000), reasons: ['transient'] }))
        hold(node, failingOpen, entity, failingProvider, 'gpt-4o', key, 'route:state', { from: 'healthy', to: 'failed' })
        hold(node, failingOpen + 6 * 3_600_000, entity, failingProvider, 'gpt-4o', key, 'route:state', { from: 'recovering', to: 'healthy' })
      }
    }
    // 30 short rate limits, held on every node.
    for (let limit = 0; limit < 30; limit++) {
      const provider = PROVIDERS[Math.floor(random() * 20)]!
      const key = KEYS[Math.floor(random() * 50)]!
      const model = MODELS[Math.floor(random() * 3)]!
      const opened = dayStart + Math.floor(random() * (DAY - 10 * MINUTE))
      const length = MINUTE + Math.floor(random() * 2 * MINUTE)
      NODES.forEach((node, index) => {
        const entity = `route:${provider}:${model}:${key}`
        episodes.push(episode(node, { entity, scope: 'route', provider, models: [model], keyIds: [key], cause: 'hold', openedAt: opened + index * 30, closedAt: opened + length, reasons: ['rate_limit'], action: 'held', checks: index === 0 ? 1 : 0, sawRefusal: index === 0, releasedBy: 'check' }))
        hold(node, opened, entity, provider, model, key, 'hold:placed', { reason: 'rate_limit', origin: index === 0 ? 'local' : 'peer' })
        hold(node, opened + length, entity, provider, model, key, 'hold:released', { by: 'check', origin: index === 0 ? 'local' : 'peer' })
      })
    }
    // 200 one-node blips: a route degraded for a few minutes.
    for (let blip = 0; blip < 200; blip++) {
      const node = NODES[Math.floor(random() * 10)]!
      const provider = PROVIDERS[Math.floor(random() * 20)]!
      const key = KEYS[Math.floor(random() * 50)]!
      const model = MODELS[Math.floor(random() * 3)]!
      const opened = dayStart + Math.floor(random() * (DAY - 15 * MINUTE))
      episodes.push(episode(node, { entity: `route:${provider}:${model}:${key}`, scope: 'route', provider, models: [model], keyIds: [key], openedAt: opened, closedAt: opened + 2 * MINUTE + Math.floor(random() * 8 * MINUTE), worstState: 'degraded', action: 'reduced_traffic', reasons: ['transient'] }))
    }
  }
  for (let index = 0; index < episodes.length; index += 2_000) await upsertEpisodes(pool, episodes.slice(index, index + 2_000))
  for (let index = 0; index < events.length; index += 5_000) await insertRows(pool, 'history_events', eventColumns, events.slice(index, index + 5_000))
  for (const node of NODES) {
    await pool.query('INSERT INTO history_nodes (node_id, region, started_at, last_seen_at) VALUES ($1, $2, $3, $4) ON CONFLICT (node_id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at', [node.id, node.region, new Date(start), new Date(now)])
  }
  return { episodes: episodes.length, events: events.length }
}

async function main() {
  const server = await openBenchServer(join(benchDir, 'results', 'history-issues'), 18420)
  const name = `history_issues_bench_${Date.now()}`
  const pool = await createBenchDatabase(server, name)
  try {
    const now = Date.now()
    const seeded = await seed(pool, now)
    await pool.query('ANALYZE')
    const queries = createHistoryQueries({ pool, now: () => now, keyName: benchKeyName, settings: () => ({}) })
    const from = `from=${Math.floor((now - 7 * DAY) / 1000)}&to=${Math.floor(now / 1000)}`
    const cases: [string, string][] = [
      ['first page, priority (the Incidents page)', `${from}&limit=25&offset=0`],
      ['needs attention + recovering, longest', `${from}&statuses=attention,recovering&sort=longest&limit=25&offset=0`],
      ['one provider, newest, page 3', `${from}&providers=provider-6&sort=newest&limit=25&offset=50`],
      ['search a key name', `${from}&search=name-key-7&limit=25&offset=0`],
      ['last 24 h, first page', `from=${Math.floor((now - DAY) / 1000)}&limit=25&offset=0`],
    ]
    const rows: string[] = []
    let total = 0
    const at = (list: number[], share: number) => list[Math.min(list.length - 1, Math.floor(share * list.length))]!
    /** Times `run` (after `warmup` untimed runs): wall clock and this process's CPU; `before` runs untimed ahead of each. */
    const measure = async (label: string, shown: string, count: number, warmup: number, run: () => Promise<IssuesAnswer>, before?: () => Promise<unknown>) => {
      const times: number[] = []
      const cpu: number[] = []
      for (let index = 0; index < count + warmup; index++) {
        await before?.()
        const started = performance.now()
        const cpuStarted = process.cpuUsage()
        const answer = await run()
        const elapsed = performance.now() - started
        const used = process.cpuUsage(cpuStarted)
        if (index >= warmup) {
          times.push(elapsed)
          cpu.push((used.user + used.system) / 1000)
        }
        if (index === 0) console.log(label, 'total', answer.total, 'page', answer.issues.length)
      }
      times.sort((a, b) => a - b)
      cpu.sort((a, b) => a - b)
      rows.push(`| ${label} | ${shown} | ${count} | ${at(times, 0.5).toFixed(1)} | ${at(times, 0.95).toFixed(1)} | ${at(times, 1 - 1e-9).toFixed(1)} | ${at(cpu, 0.5).toFixed(1)} | ${at(cpu, 0.95).toFixed(1)} |`)
    }
    const shownQuery = (query: string) => `\`${query.replace(/from=\d+&to=\d+&?/, '7 days, ').replace(/from=\d+&/, '')}\``
    const machineBefore = machineCpu()
    const wallBefore = performance.now()
    const benchBefore = process.cpuUsage()
    const loadBefore = loadavg()[0]!
    for (const [label, query] of cases) await measure(label, shownQuery(query), iterations, 2, () => queries.issues(new URLSearchParams(query)))
    total = (await queries.issues(new URLSearchParams(cases[0]![1]))).total ?? 0
    // The kept path answers what grouping the whole week afresh answers.
    const reference = createIncidentSource(pool)
    const firstPage = new URLSearchParams(cases[0]![1])
    const expected = answerIssues(await reference.full({ now, keyName: benchKeyName }), parseIssueFilters(firstPage), parseWindow(firstPage, now), benchKeyName)
    const identical = JSON.stringify(await queries.issues(firstPage)) === JSON.stringify(expected)
    if (!identical) throw new Error('the kept incidents answered the first page differently from grouping the whole week')
    // A node's first query groups the whole week; later ones only the open tail.
    await measure('first query of a node (groups the whole week)', shownQuery(cases[0]![1]), Math.min(iterations, 10), 1, () =>
      createHistoryQueries({ pool, now: () => now, keyName: benchKeyName, settings: () => ({}) }).issues(new URLSearchParams(cases[0]![1])),
    )
    // A late episode (written hours after it closed) makes its hour slice regroup on the next query.
    const late = prng(41)
    await measure('first page after a late episode (its hour regrouped)', shownQuery(cases[0]![1]), iterations, 1, () => queries.issues(new URLSearchParams(cases[0]![1])), () => {
      const node = NODES[Math.floor(late() * 10)]!
      const provider = PROVIDERS[Math.floor(late() * 20)]!
      const key = KEYS[Math.floor(late() * 50)]!
      const opened = now - 6 * DAY + Math.floor(late() * 4 * DAY)
      return upsertEpisodes(pool, [episode(node, { entity: `route:${provider}:gpt-4o:${key}`, scope: 'route', provider, models: ['gpt-4o'], keyIds: [key], openedAt: opened, closedAt: opened + 3 * MINUTE, worstState: 'degraded', action: 'reduced_traffic', reasons: ['transient'] })])
    })
    const wall = performance.now() - wallBefore
    const benchUsed = process.cpuUsage(benchBefore)
    const machineAfter = machineCpu()
    const cores = availableParallelism()
    const busyShare = (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)
    const benchShare = (benchUsed.user + benchUsed.system) / 1000 / (wall * cores)
    const table = [
      `Run ${new Date().toISOString().slice(0, 16)}Z, \`node --import tsx bench/reading/history-issues.ts --iterations ${iterations}\`, Node ${process.version}, 2 shared cores, embedded PostgreSQL 18.`,
      `Seeded: ${seeded.episodes} episodes and ${seeded.events} events over 7 days (10 nodes, 20 providers x 50 keys, a rough day every day); the week groups into ${total} incidents.`,
      '',
      `Machine while it ran: load average ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end (${cores} cores); the machine's CPU was ${(busyShare * 100).toFixed(0)} % busy, of which this bench process ${(benchShare * 100).toFixed(0)} % (the rest: its Postgres and other work on the machine).`,
      `The kept path's first page is identical to grouping the whole week afresh: ${identical ? 'yes' : 'no'}.`,
      '',
      '| query | parameters | runs | p50 ms | p95 ms | max ms | bench CPU p50 ms | bench CPU p95 ms |',
      '| --- | --- | --- | --- | --- | --- | --- | --- |',
      ...rows,
    ].join('\n')
    console.log(table)
    if (!values['no-readme']) replaceSection(join(benchDir, 'README.md'), 'history-issues', table)
  } finally {
    await dropBenchDatabase(server, pool, name)
    await server.close()
  }
}

await main()
