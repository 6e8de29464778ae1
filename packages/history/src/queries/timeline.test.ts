import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { migrate, migrations, SNAPSHOT_ROLLUP_SECONDS } from '@switchboard/store'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import { createDayPartitions } from '../partitions/day-partitions.ts'
import { insertRows } from '../writer/insert.ts'
import { snapshotColumns, type Stamped } from '../recorder/tables.ts'
import { runRetention } from '../recorder/retention.ts'
import type { SnapshotRow, State } from '../tracker/types.ts'
import { createHistoryQueries } from './service.ts'
import { buildTimeline, coverWindow, readTimelineCells, ROLLUP_SECONDS, type TimelineCell } from './timeline.ts'

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

  it('uses the block sizes migration 0018 rolls up', () => {
    expect([...ROLLUP_SECONDS]).toEqual([...SNAPSHOT_ROLLUP_SECONDS])
  })
})

/** The timeline's cells as the endpoint computed them before the rollups: straight from every snapshot. */
async function cellsFromSnapshots(database: TestDatabase, window: { from: number; to: number }, bucketSeconds: number, filters: { providers: string[] | null; models: string[] | null }): Promise<TimelineCell[]> {
  const result = await database.pool.query<TimelineCell>(
    `SELECT floor(extract(epoch FROM at) / $3)::bigint AS bucket, entity, provider, model, key_id, node_id,
            max(CASE state WHEN 'failed' THEN 3 WHEN 'degraded' THEN 2 WHEN 'recovering' THEN 1 ELSE 0 END) AS rank, bool_or(held) AS held
       FROM history_snapshots
      WHERE at >= $1 AND at <= $2 AND ($4::text[] IS NULL OR provider = ANY($4)) AND ($5::text[] IS NULL OR model = ANY($5))
      GROUP BY 1, 2, 3, 4, 5, 6`,
    [new Date(window.from), new Date(window.to), bucketSeconds, filters.providers, filters.models],
  )
  return result.rows
}

const sorted = (cells: readonly TimelineCell[]) => [...cells].sort((a, b) => `${a.bucket}|${a.entity}|${a.node_id}`.localeCompare(`${b.bucket}|${b.entity}|${b.node_id}`))

/** A deterministic pseudo-random source (mulberry32). */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = state
    value = Math.imul(value ^ (value >>> 15), value | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296
  }
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
const STATES: State[] = ['healthy', 'healthy', 'healthy', 'recovering', 'degraded', 'failed']

/** Snapshots of every entity on every node about once a minute over [from, to), with jitter, gaps and runs of trouble. */
function snapshots(rand: () => number, from: number, to: number, everyMs = MINUTE): Stamped<SnapshotRow>[] {
  const rows: Stamped<SnapshotRow>[] = []
  for (const node of NODES) {
    for (const entity of ENTITIES) {
      let state: State = 'healthy'
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
          requests: 10,
          errors: 0,
          latencyMs: 100,
        })
      }
    }
  }
  return rows
}

describe('the timeline from snapshot rollups', () => {
  let database: TestDatabase
  // Off every block boundary, as a real "now" is.
  const NOW = Date.parse('2026-12-01T13:05:17.250Z')
  let now = NOW
  const rand = random(16)
  const write = async (rows: readonly Stamped<SnapshotRow>[]) => {
    for (let index = 0; index < rows.length; index += 5_000) await insertRows(database.pool, 'history_snapshots', snapshotColumns, rows.slice(index, index + 5_000))
  }

  beforeAll(async () => {
    database = await createTestDatabase()
    // Snapshots written before the rollups existed are rolled up by the migration itself.
    await migrate(database.pool, migrations.filter((migration) => migration.version !== '0018'))
    await createDayPartitions(database.pool, ['history_events', 'history_snapshots', 'history_counts'], { fromMs: NOW, daysBehind: 3, daysAhead: 1 })
    await write(snapshots(rand, NOW - 30 * HOUR, NOW - 20 * HOUR))
    await migrate(database.pool)
    // Then the recorder's own path: batches, shuffled so blocks get late and out-of-order rows.
    const rest = snapshots(rand, NOW - 20 * HOUR, NOW - 2 * MINUTE).sort(() => rand() - 0.5)
    await write(rest)
  }, 60_000)
  afterAll(() => database.drop())

  const queries = () => createHistoryQueries({ pool: database.pool, now: () => now, keyName: (provider, keyId) => `${provider}-${keyId}-name`, settings: () => ({}) })
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
    { name: 'an empty window', query: { from: seconds(now), to: seconds(now) } },
  ]

  const compare = async () => {
    for (const { name, query } of windows()) {
      const answer = await queries().timeline(new URLSearchParams(query))
      const window = { from: Date.parse(answer.from), to: Date.parse(answer.to) }
      const filters = { providers: query.providers?.split(',') ?? null, models: query.models?.split(',') ?? null }
      const raw = await cellsFromSnapshots(database, window, answer.bucket_seconds, filters)
      expect(sorted(await readTimelineCells(database.pool, window, answer.bucket_seconds, filters)), name).toEqual(sorted(raw))
      expect(answer.rows, name).toEqual(buildTimeline(raw, answer.bucket_seconds, (provider, keyId) => `${provider}-${keyId}-name`))
    }
  }

  it('answers every window as the snapshots alone would', async () => {
    await compare()
    const day = await queries().timeline(new URLSearchParams({ from: seconds(now - DAY), to: seconds(now) }))
    expect(day.rows.length).toBe(3)
    expect(day.rows.flatMap((row) => row.keys).length).toBe(4)
    // The data is busy enough to mean something: every state, partial shares and holds.
    const buckets = day.rows.flatMap((row) => [...row.buckets, ...row.keys.flatMap((key) => key.buckets)])
    expect(new Set(buckets.map((bucket) => bucket.state))).toEqual(new Set(['healthy', 'recovering', 'degraded', 'failed']))
    expect(buckets.some((bucket) => bucket.share < 1)).toBe(true)
    expect(buckets.some((bucket) => bucket.held)).toBe(true)
  })

  it('keeps answering the same as the current partial bucket fills, late rows arrive and the clock moves', async () => {
    const before = await queries().timeline(new URLSearchParams({ from: seconds(now - DAY), to: seconds(now) }))
    // The current minute's snapshots: a node sees a failure in the open bucket.
    const current = snapshots(rand, NOW - 2 * MINUTE, NOW, 20_000).map((row) => ({ ...row, state: 'failed' as State }))
    await write(current)
    // A node whose writer lagged: a held route three hours ago, written now.
    await write([{ ...current[0]!, at: NOW - 3 * HOUR + 1_234, state: 'degraded', held: true }])
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

  it('drops the rollups of the days retention drops, and still answers as the snapshots do', async () => {
    const cutoffNow = NOW + DAY - 13 * HOUR // retention of 1 day: drops 2026-11-30 and before
    const result = await runRetention(database.pool, { now: cutoffNow, retentionDays: 1, force: true })
    expect(result?.dropped).toContain('history_snapshots_p20261130')
    const left = await database.pool.query<{ first: Date }>('SELECT min(bucket_at) AS first FROM history_snapshot_rollups')
    expect(left.rows[0]!.first.toISOString()).toBe('2026-12-01T00:00:00.000Z')
    await compare()
  })
})
