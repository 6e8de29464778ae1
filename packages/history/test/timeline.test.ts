import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { migrate, SNAPSHOT_ROLLUP_SECONDS } from '@switchboard/store'
import type { RouteState } from '@switchboard/routing'
import { createTestDatabase, type TestDatabase } from '../../store/test/database.ts'
import { seededRandom } from '@switchboard/test-kit'
import { createDayPartitions } from '../src/partitions/day-partitions.ts'
import { insertRows } from '../src/writer/insert.ts'
import { countColumns, snapshotColumns } from '../src/recorder/tables.ts'
import { runRetention } from '../src/recorder/retention.ts'
import type { CountRow, SnapshotRow, Stamped } from '../src/tracker/types.ts'
import { createHistoryQueries } from '../src/queries/service.ts'
import { buildTimeline, coverWindow, readTimelineCells, ROLLUP_SECONDS } from '../src/queries/timeline.ts'
import { COUNT_FIELDS, sumCounts } from '../src/queries/counts.ts'

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

describe('coverWindow', () => {
  it('splits any window into whole blocks inside one bucket each and snapshot ranges, covering it exactly once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 30 * DAY }),
        fc.integer({ min: 0, max: 8 * DAY }),
        fc.constantFrom(1, 60, 100, 360, 720, 1440, 2880, 7200, 10080, 86_400),
        (offset, span, bucketSeconds) => {
          const from = Date.parse('2026-11-01T00:00:00Z') + offset
          const to = from + span
          const cover = coverWindow(from, to, bucketSeconds)
          const pieces = [
            ...cover.blocks.map((block) => ({ from: block.fromMs, to: block.toMs, closed: false })),
            ...cover.snapshots.map((range) => ({ from: range.fromMs, to: range.toMs, closed: range.closed })),
          ].sort((a, b) => a.from - b.from || a.to - b.to)
          // Contiguous from `from` to `to`, no overlap, and only the end closed.
          expect(pieces[0]!.from).toBe(from)
          for (let index = 1; index < pieces.length; index++) expect(pieces[index]!.from).toBe(pieces[index - 1]!.to)
          expect(pieces.at(-1)!.to).toBe(to)
          expect(pieces.filter((piece) => piece.closed)).toEqual([pieces.at(-1)])
          for (const block of cover.blocks) {
            const size = block.seconds * 1000
            expect(bucketSeconds % block.seconds).toBe(0)
            expect(block.fromMs % size).toBe(0)
            expect(block.toMs % size).toBe(0)
          }
        },
      ),
      { numRuns: 500 },
    )
  })

  it('reads a busy day mostly from the largest block that divides the bucket', () => {
    const to = Date.parse('2026-12-01T13:05:17Z')
    const cover = coverWindow(to - DAY, to, 1440)
    expect(cover.blocks.map((block) => block.seconds)).toEqual([360, 1440, 360])
    const rawMs = cover.snapshots.reduce((sum, range) => sum + range.toMs - range.fromMs, 0)
    expect(rawMs).toBeLessThan(2 * 360_000)
  })

  it('uses the block sizes the baseline migration rolls up', () => {
    expect([...ROLLUP_SECONDS]).toEqual([...SNAPSHOT_ROLLUP_SECONDS])
  })
})

/** One node's worst state in one bucket of one entity, as the endpoint read them before the rollups, with its attempts and failures. */
interface NodeCell { bucket: string; entity: string; provider: string; model: string; key_id: string | null; node_id: string; rank: number; held: boolean; requests: string; errors: string }

/**
 * The timeline's rows as the endpoint computed them before the rollups (its query and its
 * row building, kept here as they were, plus the sums of attempts and failures): straight
 * from every snapshot of the window.
 */
async function rowsFromSnapshots(database: TestDatabase, window: { from: number; to: number }, bucketSeconds: number, filters: { providers: string[] | null; models: string[] | null }, keyName: (provider: string, keyId: string) => string) {
  const result = await database.pool.query<NodeCell>(
    `SELECT floor(extract(epoch FROM at) / $3)::bigint AS bucket, entity, provider, model, key_id, node_id,
            max(CASE state WHEN 'failed' THEN 3 WHEN 'degraded' THEN 2 WHEN 'recovering' THEN 1 ELSE 0 END) AS rank, bool_or(held) AS held,
            sum(requests) AS requests, sum(errors) AS errors
       FROM history_snapshots
      WHERE at >= $1 AND at <= $2 AND ($4::text[] IS NULL OR provider = ANY($4)) AND ($5::text[] IS NULL OR model = ANY($5))
      GROUP BY 1, 2, 3, 4, 5, 6`,
    [new Date(window.from), new Date(window.to), bucketSeconds, filters.providers, filters.models],
  )
  type Cell = { ranks: number[]; held: boolean; requests: number; failed: number }
  const entities = new Map<string, { provider: string; model: string; keyId: string | null; cells: Map<string, Cell> }>()
  for (const row of result.rows) {
    let entity = entities.get(row.entity)
    if (entity === undefined) entities.set(row.entity, (entity = { provider: row.provider, model: row.model, keyId: row.key_id, cells: new Map() }))
    let cell = entity.cells.get(row.bucket)
    if (cell === undefined) entity.cells.set(row.bucket, (cell = { ranks: [], held: false, requests: 0, failed: 0 }))
    cell.ranks.push(row.rank)
    cell.held ||= row.held
    cell.requests += Number(row.requests)
    cell.failed += Number(row.errors)
  }
  const states = ['healthy', 'recovering', 'degraded', 'failed']
  const buckets = (cells: Map<string, Cell>) =>
    [...cells.entries()]
      .sort((a, b) => Number(a[0]) - Number(b[0]))
      .map(([bucket, cell]) => {
        const worst = Math.max(...cell.ranks)
        return { at: new Date(Number(bucket) * bucketSeconds * 1000).toISOString(), state: states[worst], share: Math.round((cell.ranks.filter((rank) => rank === worst).length / cell.ranks.length) * 1000) / 1000, nodes: cell.ranks.length, held: cell.held, requests: cell.requests, failed: cell.failed }
      })
  const directions = new Map<string, { entity: string; provider: string; model: string; buckets: ReturnType<typeof buckets>; keys: { entity: string; key_id: string; key_name: string; buckets: ReturnType<typeof buckets> }[] }>()
  for (const [entity, item] of entities) {
    const key = `direction:${item.provider}:${item.model}`
    let direction = directions.get(key)
    if (direction === undefined) directions.set(key, (direction = { entity: key, provider: item.provider, model: item.model, buckets: [], keys: [] }))
    if (item.keyId === null) direction.buckets = buckets(item.cells)
    else direction.keys.push({ entity, key_id: item.keyId, key_name: keyName(item.provider, item.keyId), buckets: buckets(item.cells) })
  }
  return [...directions.values()].sort((a, b) => a.entity.localeCompare(b.entity)).map((direction) => ({ ...direction, keys: direction.keys.sort((a, b) => a.key_name.localeCompare(b.key_name)) }))
}

const ENTITIES = [
  { provider: 'openai', model: 'gpt-4o', keyId: 'oa-1' },
  { provider: 'openai', model: 'gpt-4o', keyId: 'oa-2' },
  { provider: 'openai', model: 'gpt-4o', keyId: null },
  { provider: 'azure', model: 'gpt-4o', keyId: 'az-1' },
  { provider: 'azure', model: 'gpt-4o', keyId: null },
  { provider: 'anthropic', model: 'claude-sonnet-4-5', keyId: 'an-1' },
  { provider: 'anthropic', model: 'claude-sonnet-4-5', keyId: null },
]
const NODES = [
  { nodeId: 'node-a', region: 'eu' },
  { nodeId: 'node-b', region: 'eu' },
  { nodeId: 'node-c', region: 'us' },
]
const STATES: RouteState[] = ['healthy', 'healthy', 'healthy', 'recovering', 'degraded', 'failed']

/** Snapshots of every entity on every node about once a minute over [from, to), with jitter, gaps and runs of trouble. */
function snapshots(rand: () => number, from: number, to: number, everyMs = MINUTE): Stamped<SnapshotRow>[] {
  const rows: Stamped<SnapshotRow>[] = []
  for (const node of NODES) {
    for (const entity of ENTITIES) {
      let state: RouteState = 'healthy'
      let held = false
      // On the minute, so a snapshot with no jitter sits exactly on a block boundary (and a window's end).
      for (let at = Math.ceil(from / everyMs) * everyMs; at < to; at += everyMs) {
        if (rand() < 0.02) continue // a node that missed a snapshot
        if (rand() < 0.03) state = STATES[Math.floor(rand() * STATES.length)]!
        if (entity.keyId !== null && rand() < 0.02) held = !held
        // Mostly off the minute (sub-millisecond too); sometimes exactly on a block boundary.
        const jitter = rand() < 0.1 ? 0 : Math.floor(rand() * (everyMs - 1))
        rows.push({
          ...node,
          at: at + jitter,
          entity: entity.keyId === null ? `direction:${entity.provider}:${entity.model}` : `route:${entity.provider}:${entity.model}:${entity.keyId}`,
          provider: entity.provider,
          model: entity.model,
          keyId: entity.keyId,
          state,
          held: entity.keyId !== null && held,
          weight: 50,
          score: 50,
          errorPenalty: 0,
          latencyPenalty: 0,
          utilisation: 1,
          recovery: 1,
          requests: 10 + Math.floor(rand() * 50),
          errors: state === 'healthy' ? 0 : Math.floor(rand() * 10),
          latencyMs: 100,
        })
      }
    }
  }
  return rows
}

/** Per-minute request counts of every direction on every node over [from, to), on and off the minute. */
function counts(rand: () => number, from: number, to: number): Stamped<CountRow>[] {
  const rows: Stamped<CountRow>[] = []
  const int = (most: number) => Math.floor(rand() * (most + 1))
  for (const node of NODES) {
    for (const entity of ENTITIES.filter((each) => each.keyId === null)) {
      for (let at = Math.ceil(from / MINUTE) * MINUTE; at < to; at += MINUTE) {
        if (rand() < 0.02) continue
        rows.push({ ...node, at: rand() < 0.2 ? at : at + int(MINUTE - 1), provider: entity.provider, model: entity.model, served: int(60), failed: int(3), redirected: int(5), fallbackServed: int(2), routingPicked: int(40), callerNamed: int(20), keptFailing: int(1), checks: int(1) })
      }
    }
  }
  return rows
}

/** The counts of a window as the summary summed them before the rollups. */
async function sumsFromCounts(database: TestDatabase, window: { from: number; to: number }): Promise<Record<string, number>> {
  const result = await database.pool.query<Record<string, string | null>>(
    `SELECT ${COUNT_FIELDS.map((field) => `sum(${field}) AS ${field}`).join(', ')} FROM history_counts WHERE at >= $1 AND at <= $2`,
    [new Date(window.from), new Date(window.to)],
  )
  return Object.fromEntries(Object.entries(result.rows[0]!).map(([name, value]) => [name, Number(value ?? 0)]))
}

describe('the timeline and the summary from rollups', () => {
  let database: TestDatabase
  // Off every block boundary, as a real "now" is.
  const NOW = Date.parse('2026-12-01T13:05:17.250Z')
  let now = NOW
  const rand = seededRandom(16)
  const write = async (rows: readonly Stamped<SnapshotRow>[], countRows: readonly Stamped<CountRow>[] = []) => {
    for (let index = 0; index < rows.length; index += 5_000) await insertRows(database.pool, 'history_snapshots', snapshotColumns, rows.slice(index, index + 5_000))
    for (let index = 0; index < countRows.length; index += 5_000) await insertRows(database.pool, 'history_counts', countColumns, countRows.slice(index, index + 5_000))
  }

  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.pool)
    await createDayPartitions(database.pool, ['history_events', 'history_snapshots', 'history_counts'], { fromMs: NOW, daysBehind: 3, daysAhead: 1 })
    // In time order, then the recorder's own path: batches, shuffled so blocks get late and out-of-order rows.
    await write(snapshots(rand, NOW - 30 * HOUR, NOW - 20 * HOUR), counts(rand, NOW - 30 * HOUR, NOW - 20 * HOUR))
    const rest = snapshots(rand, NOW - 20 * HOUR, NOW - 2 * MINUTE).sort(() => rand() - 0.5)
    await write(rest, counts(rand, NOW - 20 * HOUR, NOW - 2 * MINUTE).sort(() => rand() - 0.5))
  }, 60_000)
  afterAll(() => database.drop())

  const keyName = (provider: string, keyId: string) => `${provider}-${keyId}-name`
  const queries = () => createHistoryQueries({ pool: database.pool, now: () => now, keyName, settings: () => ({}) })
  const seconds = (ms: number) => String(ms / 1000)
  const windows = (): { name: string; query: Record<string, string> }[] => [
    { name: 'last 1 h', query: { from: seconds(now - HOUR), to: seconds(now) } },
    { name: 'last 6 h', query: { from: seconds(now - 6 * HOUR), to: seconds(now) } },
    { name: 'last 24 h', query: { from: seconds(now - DAY), to: seconds(now) } },
    { name: 'last 7 d', query: { from: seconds(now - 7 * DAY), to: seconds(now) } },
    { name: '24 h ending on a block boundary', query: { from: '2026-11-30T12:00:00Z', to: '2026-12-01T12:00:00Z' } },
    { name: 'custom 9 h 17 min', query: { from: '2026-11-30T23:41:03.5Z', to: '2026-12-01T08:58:00Z' } },
    { name: 'custom 12 h, 720 s buckets', query: { from: '2026-11-30T20:00:00Z', to: '2026-12-01T08:00:00Z' } },
    { name: '24 h in 2 h buckets', query: { from: seconds(now - DAY), to: seconds(now), bucket_seconds: '7200' } },
    { name: '24 h in 100 s buckets (no block divides them)', query: { from: seconds(now - DAY), to: seconds(now), bucket_seconds: '100' } },
    { name: 'ending on a bucket that holds only the snapshots at its end', query: { from: '2026-12-01T02:00:00Z', to: '2026-12-01T08:55:00Z', bucket_seconds: '100' } },
    { name: '24 h, openai only', query: { from: seconds(now - DAY), to: seconds(now), providers: 'openai' } },
    { name: '24 h, claude only', query: { from: seconds(now - DAY), to: seconds(now), models: 'claude-sonnet-4-5' } },
    { name: 'the hours written in time order, in 2 h buckets', query: { from: seconds(NOW - 30 * HOUR), to: seconds(NOW - 20 * HOUR), bucket_seconds: '7200' } },
    { name: 'an empty window', query: { from: seconds(now), to: seconds(now) } },
  ]

  const compare = async () => {
    for (const { name, query } of windows()) {
      const answer = await queries().timeline(new URLSearchParams(query))
      const window = { from: Date.parse(answer.from), to: Date.parse(answer.to) }
      const filters = { providers: query.providers?.split(',') ?? null, models: query.models?.split(',') ?? null }
      expect(answer.rows, name).toEqual(await rowsFromSnapshots(database, window, answer.bucket_seconds, filters, keyName))
      // The cells alone, in any order, build the same rows.
      const cells = await readTimelineCells(database.pool, window, answer.bucket_seconds, filters)
      expect(buildTimeline([...cells].reverse(), answer.bucket_seconds, keyName), name).toEqual(answer.rows)
      // The summary's counts over the same window (it has no provider filter).
      const raw = await sumsFromCounts(database, window)
      expect(await sumCounts(database.pool, window), name).toEqual(raw)
      const summary = await queries().summary(new URLSearchParams(query))
      expect(summary.requests, name).toMatchObject({ served: raw.served, failed: raw.failed, saved: raw.redirected! + raw.fallback_served!, routing_picked: raw.routing_picked, checks: raw.checks })
    }
  }

  it('answers every window (timeline and summary) as the snapshots and counts alone would', async () => {
    await compare()
    const day = await queries().timeline(new URLSearchParams({ from: seconds(now - DAY), to: seconds(now) }))
    expect(day.rows.length).toBe(3)
    expect(day.rows.flatMap((row) => row.keys).length).toBe(4)
    // The data is busy enough to mean something: every state, partial shares and holds.
    const buckets = day.rows.flatMap((row) => [...row.buckets, ...row.keys.flatMap((key) => key.buckets)])
    expect(new Set(buckets.map((bucket) => bucket.state))).toEqual(new Set(['healthy', 'recovering', 'degraded', 'failed']))
    expect(buckets.some((bucket) => bucket.share < 1)).toBe(true)
    expect(buckets.some((bucket) => bucket.held)).toBe(true)
    expect(buckets.some((bucket) => bucket.failed > 0)).toBe(true)
    // The earliest blocks, written in time order, count their failures too.
    const early = await queries().timeline(new URLSearchParams({ from: seconds(now - 30 * HOUR), to: seconds(now - 20 * HOUR), bucket_seconds: '7200' }))
    expect(early.rows.flatMap((row) => row.buckets).reduce((sum, bucket) => sum + bucket.failed, 0)).toBeGreaterThan(0)
  })

  it('keeps answering the same as the current partial bucket fills, late rows arrive and the clock moves', async () => {
    const before = await queries().timeline(new URLSearchParams({ from: seconds(now - DAY), to: seconds(now) }))
    // The current minute's snapshots: a node sees a failure in the open bucket.
    const current = snapshots(rand, NOW - 2 * MINUTE, NOW, 20_000).map((row) => ({ ...row, state: 'failed' as RouteState }))
    await write(current, counts(rand, NOW - 2 * MINUTE, NOW))
    // A node whose writer lagged: a held route three hours ago, written now.
    await write([{ ...current[0]!, at: NOW - 3 * HOUR + 1_234, state: 'degraded', held: true }], counts(rand, NOW - 3 * HOUR, NOW - 3 * HOUR + MINUTE))
    await compare()
    const after = await queries().timeline(new URLSearchParams({ from: seconds(now - DAY), to: seconds(now) }))
    expect(after.rows).not.toEqual(before.rows)
    expect(after.rows[0]!.keys[0]!.buckets.at(-1)!.state).toBe('failed')
    // Live mode: the same window a few seconds later, and past the next block boundary.
    for (const later of [7_000, 5 * MINUTE, 25 * MINUTE]) {
      now = NOW + later
      await compare()
    }
    now = NOW
  })

  it('drops the rollups of the days retention drops, and still answers as the snapshots and counts do', async () => {
    const cutoffNow = NOW + DAY - 13 * HOUR // retention of 1 day: drops 2026-11-30 and before
    const result = await runRetention(database.pool, { now: cutoffNow, retentionDays: 1, force: true })
    expect(result?.dropped).toContain('history_snapshots_p20261130')
    for (const table of ['history_snapshot_rollups', 'history_count_rollups']) {
      const left = await database.pool.query<{ first: Date }>(`SELECT min(bucket_at) AS first FROM ${table}`)
      expect(left.rows[0]!.first.toISOString(), table).toBe('2026-12-01T00:00:00.000Z')
    }
    await compare()
  })
})
