/**
 * 24 hours of a busy fleet's routing history, written straight into the history tables
 * (migration 0014's schema), for the dashboard's time-to-interactive bench: 3 nodes in 2
 * regions, 5 providers x 3 models x 4 keys (60 routes, 15 directions), a snapshot of every
 * route and direction per node per minute, per-minute request counts per direction (~40
 * requests/s across the fleet), and ~40 incidents of every kind with their events and
 * episodes. Deterministic (seeded random), so every run draws the same day.
 */
import type pg from 'pg'
import { createDayPartitions } from '@switchboard/history'
import { seededRandom } from '@switchboard/test-kit'

export const NODES = [
  { id: 'node-1', region: 'eu' },
  { id: 'node-2', region: 'eu' },
  { id: 'node-3', region: 'us' },
] as const
export const PROVIDERS = ['openai', 'azure', 'anthropic', 'groq', 'mistral'] as const
export const MODELS: Record<string, string[]> = {
  openai: ['gpt-4o', 'gpt-4o-mini', 'o3-mini'],
  azure: ['gpt-4o', 'gpt-4o-mini', 'o3-mini'],
  anthropic: ['claude-sonnet-4-5', 'claude-3-5-haiku-latest', 'claude-opus-4'],
  groq: ['llama-3.3-70b-versatile', 'mixtral-8x7b', 'gemma2-9b-it'],
  mistral: ['mistral-large-latest', 'mistral-small-latest', 'codestral-latest'],
}
export const KEYS = ['k1', 'k2', 'k3', 'k4']
export const keyId = (provider: string, key: string) => `${provider}-${key}`

/** config.json for a node that knows the seeded providers and keys (names resolve; nothing is sent). */
export function seededConfig(): unknown {
  return {
    providers: Object.fromEntries(PROVIDERS.map((provider) => [provider, {
      keys: KEYS.map((key) => ({ id: keyId(provider, key), name: `${provider}-prod-${key}`, value: `sk-bench-${provider}-${key}-0000`, models: MODELS[provider], weight: 1 })),
      network_config: { base_url: 'http://127.0.0.1:9' },
      ...(['openai', 'azure', 'anthropic'].includes(provider) ? {} : { custom_provider_config: { base_provider_type: 'openai' } }),
    }])),
  }
}

const MINUTE = 60_000
const TABLES = ['history_events', 'history_snapshots', 'history_counts']

interface Trouble {
  provider: string
  model: string | null
  key: string | null
  from: number
  to: number | null
  reason: string | null
  state: 'failed' | 'degraded'
  nodes: string[]
}

/** Writes the day ending at `now`; returns the row counts. */
export async function seedBusyDay(pool: pg.Pool, now: number): Promise<Record<string, number>> {
  const rand = seededRandom(16)
  const start = Math.floor((now - 24 * 3600_000) / MINUTE) * MINUTE
  await createDayPartitions(pool, TABLES, { fromMs: now, daysBehind: 2, daysAhead: 1 })
  // The troubles of the day: holds (with a reason) and metric failures, on some or all nodes.
  const troubles: Trouble[] = []
  const reasons = ['credential', 'quota', 'rate_limit', 'rate_limit', 'rate_limit', 'model_access', null, null, null]
  for (let index = 0; index < 40; index++) {
    const provider = PROVIDERS[Math.floor(rand() * PROVIDERS.length)]!
    const reason = reasons[Math.floor(rand() * reasons.length)]!
    const from = start + Math.floor(rand() * 23 * 60) * MINUTE
    const length = (reason === 'rate_limit' ? 1 + rand() * 5 : 5 + rand() * 120) * MINUTE
    const open = index < 3
    troubles.push({
      provider,
      model: reason === 'credential' ? null : MODELS[provider]![Math.floor(rand() * 3)]!,
      key: reason === null && rand() < 0.3 ? null : KEYS[Math.floor(rand() * KEYS.length)]!,
      from: open ? now - (10 + index * 40) * MINUTE : from,
      to: open ? null : Math.min(now - MINUTE, from + length),
      reason,
      state: reason === null && rand() < 0.5 ? 'degraded' : 'failed',
      nodes: reason !== null || rand() < 0.5 ? NODES.map((node) => node.id) : [NODES[Math.floor(rand() * 3)]!.id],
    })
  }
  const troubleAt = (node: string, provider: string, model: string, key: string | null, at: number) =>
    troubles.find((trouble) => trouble.provider === provider && trouble.nodes.includes(node) && (trouble.model === null || trouble.model === model) && (trouble.key === null || key === null || trouble.key === key) && at >= trouble.from && (trouble.to === null || at <= trouble.to))

  const counts = { snapshots: 0, counts: 0, events: 0, episodes: 0 }
  // Snapshots and counts, a minute at a time, flushed in big multi-row inserts.
  let snapshots: unknown[][] = []
  let requestCounts: unknown[][] = []
  const flush = async (force = false) => {
    if (snapshots.length >= 20_000 || (force && snapshots.length > 0)) {
      counts.snapshots += snapshots.length
      await insert(pool, 'history_snapshots', ['at', 'node_id', 'region', 'entity', 'provider', 'model', 'key_id', 'state', 'held', 'weight', 'score', 'error_penalty', 'latency_penalty', 'utilisation', 'recovery', 'requests', 'errors', 'latency_ms'],
        ['timestamptz', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'boolean', 'float8', 'float8', 'float8', 'float8', 'float8', 'float8', 'int4', 'int4', 'float8'], snapshots)
      snapshots = []
    }
    if (requestCounts.length >= 20_000 || (force && requestCounts.length > 0)) {
      counts.counts += requestCounts.length
      await insert(pool, 'history_counts', ['at', 'node_id', 'region', 'provider', 'model', 'served', 'failed', 'redirected', 'fallback_served', 'routing_picked', 'caller_named', 'kept_failing', 'checks'],
        ['timestamptz', 'text', 'text', 'text', 'text', 'int4', 'int4', 'int4', 'int4', 'int4', 'int4', 'int4', 'int4'], requestCounts)
      requestCounts = []
    }
  }
  for (let at = start; at <= now; at += MINUTE) {
    const stamp = new Date(at)
    for (const node of NODES) {
      for (const provider of PROVIDERS) {
        for (const model of MODELS[provider]!) {
          let directionTrouble = false
          for (const key of KEYS) {
            const trouble = troubleAt(node.id, provider, model, key, at)
            const state = trouble ? trouble.state : 'healthy'
            const held = trouble?.reason !== null && trouble !== undefined
            if (trouble) directionTrouble = true
            const errorPenalty = state === 'failed' ? 60 + rand() * 30 : state === 'degraded' ? 20 + rand() * 20 : rand() * 4
            const latencyPenalty = rand() * 10
            const score = Math.max(0, 100 - errorPenalty - latencyPenalty)
            const requests = held ? 0 : Math.floor(8 + rand() * 10)
            snapshots.push([stamp, node.id, node.region, `route:${provider}:${model}:${keyId(provider, key)}`, provider, model, keyId(provider, key), state, held, held ? 0 : score, score, errorPenalty, latencyPenalty, rand() * 0.3, state === 'healthy' ? 0 : rand(), requests, state === 'healthy' ? 0 : Math.floor(requests * 0.4), 200 + rand() * 600])
          }
          const direction = troubleAt(node.id, provider, model, null, at)
          const directionState = direction && direction.key === null ? direction.state : directionTrouble ? 'degraded' : 'healthy'
          snapshots.push([stamp, node.id, node.region, `direction:${provider}:${model}`, provider, model, null, directionState, false, 100, directionState === 'healthy' ? 95 + rand() * 5 : 50, 0, 0, 0, 0, Math.floor(40 + rand() * 20), 0, 300])
          const served = Math.floor(45 + rand() * 20)
          requestCounts.push([stamp, node.id, node.region, provider, model, served, directionTrouble ? Math.floor(rand() * 3) : 0, directionTrouble ? Math.floor(rand() * 6) : 0, directionTrouble ? Math.floor(rand() * 2) : 0, Math.floor(served * 0.68), served - Math.floor(served * 0.68), 0, directionTrouble ? 1 : 0])
        }
      }
    }
    await flush()
  }
  await flush(true)

  // Events and episodes of each trouble, as each node that saw it would have recorded them.
  const events: unknown[][] = []
  const episodes: unknown[][] = []
  troubles.forEach((trouble, index) => {
    const scope = trouble.model === null ? 'key' : trouble.key === null ? 'direction' : 'route'
    const kid = trouble.key === null ? null : keyId(trouble.provider, trouble.key)
    const entity = scope === 'key' ? `key:${trouble.provider}:${kid}` : scope === 'direction' ? `direction:${trouble.provider}:${trouble.model}` : `route:${trouble.provider}:${trouble.model}:${kid}`
    trouble.nodes.forEach((nodeId, position) => {
      const node = NODES.find((candidate) => candidate.id === nodeId)!
      const message = trouble.reason === 'credential' ? 'Incorrect API key provided.' : trouble.reason === 'quota' ? 'You exceeded your current quota.' : trouble.reason ? 'Rate limit reached for requests.' : null
      const base = [node.id, node.region, entity, trouble.provider, trouble.model, kid]
      if (trouble.reason) {
        events.push([new Date(trouble.from + position * 200), ...base.slice(0, 2), entity, 'hold:placed', ...base.slice(3), JSON.stringify({ reason: trouble.reason, message, rung: 0, wait_ms: 30_000, origin: position === 0 ? 'local' : 'peer' })])
        for (let check = 1; check < 6 && trouble.from + check * 5 * MINUTE < (trouble.to ?? now); check++) {
          events.push([new Date(trouble.from + check * 5 * MINUTE), ...base.slice(0, 2), entity, 'hold:checked', ...base.slice(3), JSON.stringify({ outcome: 'refused_again', reason: trouble.reason, rung: check, message })])
        }
        if (trouble.to !== null) events.push([new Date(trouble.to), ...base.slice(0, 2), entity, 'hold:released', ...base.slice(3), JSON.stringify({ by: 'check', cause: 'check', reason: trouble.reason, origin: 'local' })])
      } else {
        events.push([new Date(trouble.from), ...base.slice(0, 2), entity, scope === 'direction' ? 'direction:state' : 'route:state', ...base.slice(3), JSON.stringify({ from: 'healthy', to: trouble.state })])
        if (trouble.to !== null) events.push([new Date(trouble.to), ...base.slice(0, 2), entity, scope === 'direction' ? 'direction:state' : 'route:state', ...base.slice(3), JSON.stringify({ from: trouble.state, to: 'healthy' })])
      }
      const detail = {
        cause: trouble.reason ? 'hold' : 'state', phase: trouble.to === null ? (trouble.reason ? 'held' : 'failing') : 'closed', worstState: trouble.state, reasons: trouble.reason ? [trouble.reason] : [],
        action: trouble.reason ? 'held' : scope === 'direction' ? 'moved_traffic' : 'reduced_traffic', checks: trouble.reason ? 3 : 0, checkOutcomes: trouble.reason ? { refused_again: 3 } : {},
        requestsFailed: Math.floor(rand() * 5), pinnedKeptFailed: 0, failedNoAlternative: 0, sawRefusal: position === 0, message, lastRequestAt: trouble.to ?? now,
        recoveringSince: null, releasedBy: trouble.to === null ? null : 'check', lost: false,
      }
      episodes.push([node.id, node.region, `bench-${index}`, entity, scope, trouble.provider, JSON.stringify(trouble.model ? [trouble.model] : MODELS[trouble.provider]), JSON.stringify(kid ? [kid] : []), new Date(trouble.from), trouble.to === null ? null : new Date(trouble.to), new Date(trouble.to ?? now), JSON.stringify(detail)])
    })
  })
  counts.events = events.length
  await insert(pool, 'history_events', ['at', 'node_id', 'region', 'entity', 'kind', 'provider', 'model', 'key_id', 'detail'], ['timestamptz', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'jsonb'], events)
  counts.episodes = episodes.length
  await pool.query(
    `INSERT INTO history_episodes (node_id, region, id, entity, scope, provider, models, key_ids, opened_at, closed_at, updated_at, detail)
     SELECT node_id, region, id, entity, scope, provider, ARRAY(SELECT jsonb_array_elements_text(models)), ARRAY(SELECT jsonb_array_elements_text(key_ids)), opened_at, closed_at, updated_at, detail
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[], $9::timestamptz[], $10::timestamptz[], $11::timestamptz[], $12::jsonb[])
         AS input(node_id, region, id, entity, scope, provider, models, key_ids, opened_at, closed_at, updated_at, detail)`,
    columns(episodes, 12),
  )
  for (const node of NODES) {
    await pool.query('INSERT INTO history_nodes (node_id, region, started_at, last_seen_at) VALUES ($1, $2, $3, $4) ON CONFLICT (node_id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at', [node.id, node.region, new Date(start), new Date(now)])
  }
  return counts
}

function columns(rows: readonly unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, column) => rows.map((row) => row[column]))
}

async function insert(pool: pg.Pool, table: string, names: string[], types: string[], rows: readonly unknown[][]): Promise<void> {
  if (rows.length === 0) return
  const casts = types.map((type, index) => `$${index + 1}::${type}[]`).join(', ')
  await pool.query(`INSERT INTO ${table} (${names.join(', ')}) SELECT * FROM unnest(${casts})`, columns(rows, names.length))
}
