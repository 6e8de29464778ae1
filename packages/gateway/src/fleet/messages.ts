/** What gateway nodes say to each other, as zod schemas checked before use (design.md, "Cluster model"); hold entries again by routing's parser. */
import { z } from 'zod'
import { TRIAL_MAX_WAIT_MS, type HoldEntry, type TrialEntry } from '@switchboard/routing'
import { switchFields } from '../config/schema.ts'

/** A provider, key or node name, and a model name, as peers may send them. */
const identifier = z.string().min(1).max(200)
const model = z.string().min(1).max(500)
const count = z.number().int().nonnegative()

/** Hold entries (and tombstones) a node changed, or a snapshot of them. */
export const holdBatch = z.strictObject({ entries: z.array(z.unknown()).max(20_000) })

/** A key whose rate-limit window ran out: the region backs it off until `until_ms`. */
export const rateLimitSignal = z.strictObject({ provider: identifier, key_id: identifier, model, until_ms: z.number().int().positive() })

const settings = z.strictObject(switchFields(z.boolean()))

/** Providers or keys changed in the config store (peers re-read it), or new settings (applied as sent). */
export const configChange = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('providers') }),
  z.strictObject({ kind: z.literal('settings'), settings }),
  // Gateway keys were created or revoked: peers re-read them (a revoked one stops within a second).
  z.strictObject({ kind: z.literal('gateway_keys') }),
])
export type ConfigChange = z.infer<typeof configChange>

/** A gateway key as nodes share it (issue 37, item 5): its secret's SHA-256, never the secret, and its limits. */
const gatewayKeyWire = z.strictObject({
  id: identifier,
  name: identifier,
  secret_hash: z.string().regex(/^[0-9a-f]{64}$/),
  providers: z.array(identifier).max(1_000).nullable(),
  models: z.array(model).max(10_000).nullable(),
  requests_per_minute: z.number().int().positive().nullable(),
  tokens_per_minute: z.number().int().positive().nullable(),
})

/** The answer to `config/snapshot/1`: the gateway keys as the peer read them from Postgres (null: it has not). */
export const configSnapshot = z.strictObject({
  gateway_keys: z.strictObject({ from: z.enum(['postgres', 'peer']), keys: z.array(gatewayKeyWire).max(50_000) }).nullable(),
})
export type ConfigSnapshot = z.infer<typeof configSnapshot>

/** Anti-entropy: a digest of the hold set, and a pull of the buckets that differ. */
export const digestRequest = z.strictObject({})
/** A peer's wall clock, for the offset propagation lags are corrected by (clock.ts). */
export const clockResponse = z.strictObject({ at: z.number().finite() })
export const digestResponse = z.strictObject({ buckets: z.array(z.string().max(64)).max(64) })
export const bucketsRequest = z.strictObject({ buckets: z.array(z.number().int().min(0).max(63)).max(64) })
/** A large set's second step (issue 19): `[id, wallMs, counter, nodeId]` of the differing buckets, so only what differs is pulled. */
export const versionsResponse = z.strictObject({
  versions: z.array(z.tuple([z.string().max(2048), z.number().finite(), count, z.string().max(128)])).max(50_000),
})
export type VersionsResponse = z.infer<typeof versionsResponse>
/** Most hold ids one pull by id asks for; a larger difference is pulled by bucket. */
export const MAX_PULL_IDS = 2_000
export const entriesRequest = z.strictObject({ ids: z.array(z.string().max(2048)).max(MAX_PULL_IDS) })

/** A node's token count of one gateway key in one limit window (its own total, not a delta). */
export const tokenUsage = z.strictObject({ key_id: identifier, window: count, tokens: count })
export type CallerTokenUsage = z.infer<typeof tokenUsage>

/** A lease of requests of a gateway key for one window, asked of the node that owns the counts. */
export const leaseRequest = z.strictObject({ key_id: identifier, window: count, limit: z.number().int().positive() })
export type LeaseRequest = z.infer<typeof leaseRequest>
export const leaseResponse = z.strictObject({ granted: count })

/** Trial rounds a node changed (or the whole set, for a joining node); each entry is checked on its own (`parseTrialEntry`). */
export const trialBatch = z.strictObject({ entries: z.array(z.unknown()).max(5_000) })

/** One trial round on the wire (issue 35, item 8): a route's due trial, its rung, and who claimed it. */
const trialEntryWire = z.strictObject({
  provider: identifier,
  model,
  key_id: identifier,
  /** The hybrid-clock version that opened the round: [wall ms, counter, node id]. */
  round: z.tuple([count, count, z.string().min(1).max(128)]),
  state: z.enum(['failing', 'served']),
  rung: z.number().int().min(0).max(32),
  due_at: count,
  region: identifier,
  claim: z.strictObject({ node_id: z.string().min(1).max(128), generation: z.number().int().positive().max(1_000_000), at: count, started_at: count.nullable() }).nullable(),
})
export type TrialEntryWire = z.infer<typeof trialEntryWire>

/** A round as it goes on the wire. */
export function trialToWire(entry: TrialEntry): TrialEntryWire {
  const { claim, round } = entry
  return {
    provider: entry.provider, model: entry.model, key_id: entry.keyId, round: [round.wallMs, round.counter, round.nodeId], state: entry.state, rung: entry.rung, due_at: Math.round(entry.dueAt), region: entry.region,
    claim: claim === null ? null : { node_id: claim.nodeId, generation: claim.generation, at: Math.round(claim.at), started_at: claim.startedAt === null ? null : Math.round(claim.startedAt) },
  }
}

/** A round from a peer, or null when it is not one (dropped and counted by the caller). */
export function parseTrialEntry(value: unknown): TrialEntry | null {
  const parsed = trialEntryWire.safeParse(value)
  if (!parsed.success) return null
  const wire = parsed.data
  const [wallMs, counter, nodeId] = wire.round
  const claim = wire.claim
  return {
    provider: wire.provider, model: wire.model, keyId: wire.key_id, round: { wallMs, counter, nodeId }, state: wire.state, rung: wire.rung, dueAt: wire.due_at, region: wire.region,
    claim: claim === null ? null : { nodeId: claim.node_id, generation: claim.generation, at: claim.at, startedAt: claim.started_at },
  }
}

/** A round whose times a sane peer could have sent: within the clock skew, and due within the longest wait beyond it. */
export function plausibleTrial(entry: TrialEntry, at: number): boolean {
  const latest = at + MAX_CLOCK_SKEW_MS
  const claim = entry.claim
  return entry.round.wallMs <= latest && entry.dueAt <= latest + TRIAL_MAX_WAIT_MS && (claim === null || (claim.at <= latest && (claim.startedAt ?? 0) <= latest))
}

export const PROTOCOLS = {
  lease: 'gateway-keys/lease/1',
  trials: 'trials/snapshot/1',
  config: 'config/snapshot/1',
  snapshot: 'holds/snapshot/1',
  digest: 'holds/digest/1',
  buckets: 'holds/buckets/1',
  versions: 'holds/versions/1',
  entries: 'holds/entries/1',
  clock: 'clock/1',
} as const

/** How far ahead of this node's clock a peer's times may be: a version from further ahead would win every merge for as long. */
const MAX_CLOCK_SKEW_MS = 5 * 60_000
/** The longest rate-limit backoff a peer may ask for (provider windows reset within minutes). */
export const MAX_RATE_LIMIT_MS = 60 * 60_000
/** The longest wait a hold may carry (above the longest ladder cap, 30 min). */
const MAX_HOLD_WAIT_MS = 24 * 60 * 60_000

/** A hold entry whose times and wait a sane peer could have sent (see MAX_CLOCK_SKEW_MS). */
export function plausibleHold(entry: HoldEntry, at: number): boolean {
  const latest = at + MAX_CLOCK_SKEW_MS
  return entry.version.wallMs <= latest && entry.since <= latest && entry.waitStartedAt <= latest && (entry.releasedAt ?? 0) <= latest && entry.baseWaitMs <= MAX_HOLD_WAIT_MS
}
