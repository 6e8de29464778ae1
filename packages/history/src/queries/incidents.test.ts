/**
 * The kept incidents (sealed slices plus the open tail) answer exactly what grouping every
 * episode afresh answers: on a random fleet history in a real Postgres, and after each kind of
 * change that reaches sealed slices (a late episode, a rewritten one, retention) or only the
 * tail, and as time moves the horizon.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate } from '@switchboard/store'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import type { GroupedIncident, StoredEpisode } from '../incidents/group.ts'
import { upsertEpisodes } from '../recorder/tables.ts'
import { newEpisode } from '../tracker/episodes.ts'
import type { Episode } from '../tracker/types.ts'
import { createIncidentSource } from './incidents.ts'
import { answerIssues, parseIssueFilters } from './issues.ts'
import { parseWindow } from './params.ts'
import { createHistoryQueries } from './service.ts'

const NOW = Date.parse('2026-12-03T12:00:00Z')
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const NODES = [
  { id: 'a', region: 'eu' },
  { id: 'b', region: 'eu' },
  { id: 'c', region: 'us' },
  // Stopped reporting an hour ago with episodes still open: they read as lost.
  { id: 'd', region: 'us' },
]
const PROVIDERS = ['openai', 'groq', 'mistral', 'cohere']
const MODELS = ['gpt-4o', 'gpt-4o-mini']
const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8']
const keyName = (_provider: string, keyId: string) => `name-${keyId}`

/** mulberry32: the same history for the same seed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let value = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }
}

let sequence = 0
function episode(node: string, fields: Partial<Episode> & Pick<Episode, 'entity' | 'provider' | 'openedAt' | 'closedAt'> & { cause?: Episode['cause'] }): StoredEpisode {
  const region = NODES.find((each) => each.id === node)!.region
  const base = newEpisode({ id: `${node}:${(sequence++).toString(36)}`, entity: fields.entity, provider: fields.provider, models: [], keyIds: [], cause: fields.cause ?? 'state', openedAt: fields.openedAt })
  return { ...base, phase: fields.closedAt === null ? 'failed' : 'closed', updatedAt: fields.closedAt ?? fields.openedAt + MINUTE, ...fields, nodeId: node, region }
}

/** Three days of problems: held keys and routes on several nodes, failing directions with their routes, one-node blips and flaps, some still open. */
function history(random: () => number, now: number): StoredEpisode[] {
  const pick = <T,>(list: readonly T[]) => list[Math.floor(random() * list.length)]!
  const out: StoredEpisode[] = []
  for (let problem = 0; problem < 160; problem++) {
    const provider = pick(PROVIDERS)
    const model = pick(MODELS)
    const key = pick(KEYS)
    // Most over three days, some in the last half hour (the open tail).
    const opened = random() < 0.3 ? now - Math.floor(random() * 30 * MINUTE) : now - 3 * 24 * HOUR + Math.floor(random() * 3 * 24 * HOUR)
    const length = Math.floor(random() * (random() < 0.8 ? 20 * MINUTE : 5 * HOUR))
    const open = opened + length > now - 10 * MINUTE || random() < 0.02
    const closedAt = (offset: number) => (open ? null : Math.min(now - 1000, opened + length + offset))
    // Some problems only the node that stopped reporting saw.
    const nodes = random() < 0.15 ? ['d'] : NODES.slice(0, 1 + Math.floor(random() * 4)).map((node) => node.id)
    const recovering = open && random() < 0.5 ? { phase: 'recovering' as const, recoveringSince: now - 5 * MINUTE, lastRequestAt: random() < 0.5 ? now - 4 * MINUTE : now - 10_000 } : {}
    const kind = pick(['key', 'route-hold', 'direction', 'blip', 'flap'] as const)
    for (const [index, node] of nodes.entries()) {
      const jitter = index * 700 + Math.floor(random() * 3000)
      if (kind === 'key') {
        out.push(episode(node, { entity: `key:${provider}:${key}`, scope: 'key', cause: 'hold', provider, keyIds: [key], openedAt: opened + jitter, closedAt: closedAt(jitter), phase: open ? 'held' : 'closed', reasons: [pick(['credential', 'quota'])], action: 'held', sawRefusal: index === 0, message: 'refused', ...recovering }))
        // The key's routes failed meanwhile: folded into the key's incident.
        out.push(episode(node, { entity: `route:${provider}:${model}:${key}`, scope: 'route', provider, models: [model], keyIds: [key], openedAt: opened + jitter + 500, closedAt: closedAt(jitter - 500), worstState: 'failed', reasons: ['credential'] }))
      } else if (kind === 'route-hold') {
        out.push(episode(node, { entity: `route:${provider}:${model}:${key}`, scope: 'route', cause: 'hold', provider, models: [model], keyIds: [key], openedAt: opened + jitter, closedAt: closedAt(jitter), phase: open ? 'held' : 'closed', reasons: ['rate_limit'], action: 'held', requestsFailed: Math.floor(random() * 3), ...recovering }))
      } else if (kind === 'direction') {
        out.push(episode(node, { entity: `direction:${provider}:${model}`, scope: 'direction', provider, models: [model], keyIds: KEYS.slice(0, 3), openedAt: opened + jitter, closedAt: closedAt(jitter), worstState: 'failed', reasons: ['transient'], action: 'moved_traffic', failedNoAlternative: random() < 0.3 ? 2 : 0, pinnedKeptFailed: random() < 0.2 ? 1 : 0, ...recovering }))
        for (const each of KEYS.slice(0, 3)) out.push(episode(node, { entity: `route:${provider}:${model}:${each}`, scope: 'route', provider, models: [model], keyIds: [each], openedAt: opened + jitter + 200, closedAt: closedAt(jitter + 300), worstState: 'failed', reasons: ['transient'] }))
      } else if (kind === 'flap' && index === 0) {
        // The same route degrading again after 30 s (one problem) or after 5 min (two).
        const gap = random() < 0.5 ? 30_000 : 5 * MINUTE
        out.push(episode(node, { entity: `route:${provider}:${model}:${key}`, scope: 'route', provider, models: [model], keyIds: [key], openedAt: opened, closedAt: opened + 2 * MINUTE, reasons: ['transient'] }))
        out.push(episode(node, { entity: `route:${provider}:${model}:${key}`, scope: 'route', provider, models: [model], keyIds: [key], openedAt: opened + 2 * MINUTE + gap, closedAt: closedAt(2 * MINUTE + gap), reasons: ['timeout'] }))
      } else if (index === 0) {
        out.push(episode(node, { entity: `route:${provider}:${model}:${key}`, scope: 'route', provider, models: [model], keyIds: [key], openedAt: opened, closedAt: closedAt(0), reasons: ['transient'] }))
      }
    }
  }
  // One incident of every status, whatever the draw.
  const zeta = (key: string) => ({ entity: `route:zeta:gpt-4o:${key}`, scope: 'route' as const, provider: 'zeta', models: ['gpt-4o'], keyIds: [key] })
  out.push(episode('d', { ...zeta('z1'), openedAt: now - 90 * MINUTE, closedAt: null }))
  out.push(episode('a', { ...zeta('z2'), cause: 'hold', openedAt: now - 20 * MINUTE, closedAt: null, phase: 'recovering', recoveringSince: now - 10 * MINUTE, lastRequestAt: now - 9 * MINUTE, reasons: ['rate_limit'], action: 'held' }))
  out.push(episode('a', { ...zeta('z3'), cause: 'hold', openedAt: now - 20 * MINUTE, closedAt: null, phase: 'recovering', recoveringSince: now - 10 * MINUTE, lastRequestAt: now - 10_000, reasons: ['rate_limit'], action: 'held' }))
  out.push(episode('b', { ...zeta('z4'), openedAt: now - 20 * MINUTE, closedAt: null, reasons: ['transient'] }))
  for (const node of ['a', 'b']) out.push(episode(node, { entity: 'key:zeta:z5', scope: 'key', cause: 'hold', provider: 'zeta', keyIds: ['z5'], openedAt: now - 20 * MINUTE, closedAt: null, phase: 'held', reasons: ['credential'], action: 'held', message: 'Incorrect API key' }))
  return out
}

/** Incidents in a fixed order, each with the ids of its episodes: what two answers must agree on. */
const canonical = (grouped: readonly GroupedIncident[]) =>
  grouped
    .map((item) => ({ incident: item.incident, episodes: item.episodes.map((each) => `${each.nodeId}/${each.id}`), openedMs: item.openedMs, closedMs: item.closedMs }))
    .sort((a, b) => (a.incident.id < b.incident.id ? -1 : a.incident.id > b.incident.id ? 1 : 0))

describe('kept incidents answer what grouping everything answers', () => {
  let database: TestDatabase
  let now = NOW
  const options = () => ({ now, lostAfterMs: 3 * MINUTE, waitingAfterMs: 2 * MINUTE, keyName })

  const write = (episodes: readonly StoredEpisode[]) => upsertEpisodes(database.pool, episodes)
  const heartbeats = async () => {
    for (const node of NODES) {
      const seen = node.id === 'd' ? now - HOUR : now
      await database.pool.query(
        `INSERT INTO history_nodes (node_id, region, started_at, last_seen_at) VALUES ($1, $2, $3, $4) ON CONFLICT (node_id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at`,
        [node.id, node.region, new Date(NOW - 4 * 24 * HOUR), new Date(seen)],
      )
    }
  }

  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.pool)
  })
  afterAll(async () => {
    await database?.drop()
  })

  it('on random histories, after late, rewritten and deleted episodes, and as the horizon moves', async () => {
    for (const seed of [1, 2, 3]) {
      await database.pool.query('TRUNCATE history_episodes, history_nodes')
      now = NOW
      const random = prng(seed)
      const seeded = history(random, now)
      for (let index = 0; index < seeded.length; index += 500) await write(seeded.slice(index, index + 500))
      await heartbeats()
      const kept = createIncidentSource(database.pool)
      const other = createIncidentSource(database.pool)
      const same = async (what: string) => {
        const reference = canonical(await kept.full(options()))
        expect(canonical(await kept.grouped(options())), `seed ${seed}: ${what}`).toEqual(reference)
        // Another node, with what it kept so far, answers the same.
        expect(canonical(await other.grouped(options())), `seed ${seed}: ${what}, another node`).toEqual(reference)
        return reference
      }

      const first = await same('the first query')
      expect(first.length).toBeGreaterThan(60)
      expect(new Set(first.map((item) => item.incident.status)), `seed ${seed}`).toEqual(new Set(['attention', 'recovering', 'mitigated', 'waiting', 'resolved', 'unobserved']))
      // The second query reloads nothing: it groups only the open tail.
      const built = kept.stats().reloadedSlices
      expect(built).toBeGreaterThan(10)
      await same('a second query')
      expect(kept.stats().reloadedSlices).toBe(built)

      // A late episode two days back joins two problems of one route that were 5 minutes apart.
      const at = now - 2 * 24 * HOUR + Math.floor(random() * HOUR)
      const route = { entity: 'route:openai:gpt-4o-mini:k9', scope: 'route' as const, provider: 'openai', models: ['gpt-4o-mini'], keyIds: ['k9'] }
      await write([episode('a', { ...route, openedAt: at, closedAt: at + 10 * MINUTE, reasons: ['transient'] }), episode('a', { ...route, openedAt: at + 15 * MINUTE, closedAt: at + 20 * MINUTE, reasons: ['timeout'] })])
      const apart = (await same('two separate problems written late')).filter((item) => item.incident.entity === route.entity)
      expect(apart).toHaveLength(2)
      const beforeLate = kept.stats().reloadedSlices
      await write([episode('b', { ...route, openedAt: at + 9 * MINUTE, closedAt: at + 16 * MINUTE, reasons: ['transient'] })])
      const bridged = (await same('a late episode bridging them')).filter((item) => item.incident.entity === route.entity)
      expect(bridged).toHaveLength(1)
      expect(bridged[0]!.incident.nodes).toEqual(['a', 'b'])
      // Only the slice the late episode closed in was reloaded.
      expect(kept.stats().reloadedSlices - beforeLate).toBe(1)

      // Sealed rows rewritten in place (as a node's restart marks its old episodes lost): half a day of incidents turns unobserved.
      const unobserved = (list: typeof first) => list.filter((item) => item.incident.status === 'unobserved').length
      const beforeRewrite = unobserved(await same('before the rewrite'))
      await database.pool.query(`UPDATE history_episodes SET detail = detail || '{"lost": true}' WHERE closed_at BETWEEN $1 AND $2`, [new Date(now - 36 * HOUR), new Date(now - 24 * HOUR)])
      expect(unobserved(await same('sealed episodes rewritten'))).toBeGreaterThan(beforeRewrite)

      // Retention drops the oldest day.
      await database.pool.query('DELETE FROM history_episodes WHERE closed_at < $1', [new Date(now - 2.5 * 24 * HOUR)])
      await same('old episodes deleted')

      // Open episodes close and new ones open: only the tail changed, nothing is reloaded.
      const open = (await database.pool.query<{ node_id: string; id: string }>(`SELECT node_id, id FROM history_episodes WHERE closed_at IS NULL AND node_id <> 'd' LIMIT 5`)).rows
      await database.pool.query(`UPDATE history_episodes SET closed_at = $1, updated_at = $1 WHERE (node_id, id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`, [new Date(now - 5_000), open.map((row) => row.node_id), open.map((row) => row.id)])
      await write([episode('b', { entity: 'direction:groq:gpt-4o', scope: 'direction', provider: 'groq', models: ['gpt-4o'], keyIds: KEYS, openedAt: now - 30_000, closedAt: null, reasons: ['transient'] })])
      const beforeTail = kept.stats().reloadedSlices
      await same('the tail moved')
      expect(kept.stats().reloadedSlices).toBe(beforeTail)

      // Three hours on: the horizon passes what was the tail; heartbeats stop for a while, so open episodes read lost.
      now += 3 * HOUR
      await same('three hours later, nobody reporting')
      await heartbeats()
      await same('three hours later, heartbeats back')
      expect(kept.stats().fallbacks).toBe(0)
    }
  }, 60_000)

  it('the issues API answers through the kept incidents what it answers from all of them', async () => {
    now = NOW
    const queries = createHistoryQueries({ pool: database.pool, now: () => now, keyName, settings: () => ({}) }, { lostAfterMs: 3 * MINUTE, waitingAfterMs: 2 * MINUTE })
    const reference = createIncidentSource(database.pool)
    for (const query of ['', 'limit=25&offset=0', 'limit=10&offset=20&sort=newest', 'statuses=attention,recovering&sort=longest&limit=25', 'providers=groq&sort=oldest&limit=5&offset=5', 'search=name-k2&limit=25', `from=${Math.floor((now - 3 * 24 * HOUR) / 1000)}&limit=100`]) {
      const params = new URLSearchParams(query)
      const expected = answerIssues(await reference.full(options()), parseIssueFilters(params), parseWindow(params, now), keyName)
      expect(await queries.issues(params), query).toEqual(expected)
    }
  })
})
