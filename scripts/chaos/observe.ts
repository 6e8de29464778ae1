/**
 * What the chaos run watches while it runs: every live node's held keys (polled, and on
 * demand around each restart), the keys the fleet is configured with, and the simulator's
 * request log, collected in pieces so a long run outgrows its 10,000-entry ring safely.
 */
import { deriveKeyId } from '@switchboard/store'
import type { HoldObservation, KeyFacts, UpstreamRecord } from './held-traffic.ts'
import type { ListedHold } from './restarts.ts'

/** How the run reaches a node's admin API. */
export interface AdminAccess {
  /** Bearer token, when the fleet has admin tokens. */
  token?: string
}

/** A node the observers may poll. */
export interface WatchedNode {
  nodeId: string
  url: string
  incarnation: number
}

/** GET `path` on a node's admin API; throws on anything but a 200 with JSON. */
export async function adminGet(url: string, path: string, access: AdminAccess, timeoutMs = 5_000): Promise<unknown> {
  const response = await fetch(`${url}${path}`, {
    headers: access.token ? { authorization: `Bearer ${access.token}` } : {},
    signal: AbortSignal.timeout(timeoutMs),
  })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET ${url}${path}: ${response.status} ${text.slice(0, 200)}`)
  return JSON.parse(text) as unknown
}

interface Condition {
  provider: string
  key_id: string
  key_name?: string
  model: string | null
  reason: string
  since: string
  next_check_at: string
  rung: number
  checks: number
}

/** One node's holds right now, as observations. */
export async function pollHolds(node: WatchedNode, access: AdminAccess, timeoutMs?: number): Promise<HoldObservation[]> {
  const body = (await adminGet(node.url, '/api/adaptive-routing/conditions', access, timeoutMs)) as { conditions: Condition[] }
  const observedAt = Date.now()
  return body.conditions.map((condition) => ({
    observedAt,
    nodeId: node.nodeId,
    incarnation: node.incarnation,
    provider: condition.provider,
    keyId: condition.key_id,
    keyName: condition.key_name ?? null,
    model: condition.model,
    reason: condition.reason,
    since: Date.parse(condition.since),
    nextCheckAt: Date.parse(condition.next_check_at),
    rung: condition.rung,
    checks: condition.checks,
  }))
}

/** The restart rule's view of a node's observations. */
export function listed(observations: readonly HoldObservation[]): ListedHold[] {
  return observations.map(({ provider, keyId, keyName, model, since, nextCheckAt }) => ({ provider, keyId, keyName, model, since, nextCheckAt }))
}

/** Polls every live node's holds on an interval, keeping every observation. */
export interface HoldWatch {
  observations: HoldObservation[]
  /** Polls one node now and keeps what it saw; throws if it does not answer. */
  pollNow(node: WatchedNode, timeoutMs?: number): Promise<HoldObservation[]>
  stop(): Promise<void>
}

export function watchHolds(nodes: () => WatchedNode[], access: AdminAccess, everyMs: number): HoldWatch {
  const observations: HoldObservation[] = []
  const pollNow = async (node: WatchedNode, timeoutMs?: number) => {
    const seen = await pollHolds(node, access, timeoutMs)
    observations.push(...seen)
    return seen
  }
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      // A node that is going down as we ask simply misses this round.
      await Promise.all(nodes().map((node) => pollNow(node, 3_000).catch(() => [])))
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  })()
  return {
    observations,
    pollNow,
    async stop() {
      stopped = true
      await loop
    },
  }
}

interface ApiKey {
  id?: string
  name: string
  value: string
  models: string[]
  aliases?: Record<string, string>
  azure_key_config?: { deployments?: Record<string, string> }
}

/**
 * The configured keys, from `GET /api/providers`. Values come back redacted to their last four
 * characters, which is what the simulator logs; a value written as `env.NAME` is looked up
 * in `env` (the fleet's environment, when the run knows it).
 */
export async function configuredKeys(url: string, access: AdminAccess, env: Record<string, string> = {}): Promise<KeyFacts[]> {
  const { providers } = (await adminGet(url, '/api/providers', access)) as { providers: { name: string; keys: ApiKey[] }[] }
  return providers.flatMap((provider) =>
    provider.keys.map((key) => {
      const value = key.value.startsWith('env.') ? env[key.value.slice(4)] : key.value
      return {
        provider: provider.name,
        id: key.id ?? deriveKeyId(provider.name, key.name),
        name: key.name,
        suffix: value !== undefined && value.length >= 4 && !value.endsWith('****') ? value.slice(-4) : null,
        models: key.models,
        upstreamNames: { ...key.aliases, ...key.azure_key_config?.deployments },
      }
    }),
  )
}

/** The simulator's log, fetched every few seconds and stitched together. */
export interface UpstreamLog {
  records: UpstreamRecord[]
  /** True when two fetches did not overlap: more than the ring's 10,000 requests passed between them. */
  gap: boolean
  /** Fetches once more and stops. */
  stop(): Promise<void>
}

/** Empties the simulator's log (the run's traffic starts from here). */
export async function resetUpstreamLog(simulatorUrl: string): Promise<void> {
  const response = await fetch(`${simulatorUrl}/_sim/requests`, { method: 'DELETE', signal: AbortSignal.timeout(5_000) })
  if (!response.ok) throw new Error(`DELETE ${simulatorUrl}/_sim/requests: ${response.status}`)
}

export function collectUpstreamLog(simulatorUrl: string, everyMs: number): UpstreamLog {
  const log: UpstreamLog = { records: [], gap: false, stop: async () => {} }
  const fetchOnce = async () => {
    const response = await fetch(`${simulatorUrl}/_sim/requests`, { signal: AbortSignal.timeout(10_000) })
    if (!response.ok) throw new Error(`GET ${simulatorUrl}/_sim/requests: ${response.status}`)
    const latest = (await response.json()) as UpstreamRecord[]
    const stitched = stitch(log.records, latest)
    if (stitched.gap) log.gap = true
    log.records.push(...stitched.added)
  }
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      await new Promise((resolve) => setTimeout(resolve, everyMs))
      if (!stopped) await fetchOnce().catch(() => {})
    }
  })()
  log.stop = async () => {
    stopped = true
    await loop
    await fetchOnce()
  }
  return log
}

/**
 * What `latest` (the ring's content now, oldest first) adds to `known`: the entries after the
 * longest stretch of `latest` that repeats the end of `known`. Records carry no id, so an
 * overlap is found by comparing up to 50 records at the seam.
 */
export function stitch(known: readonly UpstreamRecord[], latest: readonly UpstreamRecord[]): { added: UpstreamRecord[]; gap: boolean } {
  if (known.length === 0) return { added: [...latest], gap: false }
  const text = (record: UpstreamRecord) => JSON.stringify([record.at, record.provider, record.key_suffix, record.model, record.stream, record.status, record.aborted])
  const tail = known.slice(-50).map(text)
  const seam = tail[tail.length - 1]!
  for (let index = latest.length - 1; index >= 0; index--) {
    if (text(latest[index]!) !== seam) continue
    const compared = Math.min(tail.length, index + 1)
    let matches = true
    for (let back = 1; back < compared && matches; back++) matches = text(latest[index - back]!) === tail[tail.length - 1 - back]
    if (matches) return { added: latest.slice(index + 1), gap: false }
  }
  return { added: [...latest], gap: latest.length > 0 }
}
