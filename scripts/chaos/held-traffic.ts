/**
 * "Requests sent to a held key before its due time", judged after the run from what was
 * observed: the simulator's request log and every node's held keys polled through the run.
 * Pure: no clock, no network, so the rule has its own unit tests (rules.test.ts). The rule,
 * also written out in scripts/chaos/README.md:
 *
 * A hold "episode" is one hold as the admin API lists it: provider, key, model (null = whole
 * key) and `since`. Its window runs from `since` + the propagation grace to the first request
 * to the key the upstream served (that request released it), or, without one, to the last
 * poll that saw the hold on any node. Every request to the key (and to the held model, for a model hold) the simulator logged in the
 * window must be a check: each node incarnation's due time seen for a hold version is one
 * check slot, usable by one request that ended at or after that due time, and only until a
 * newer version of the hold (a renewal by another node's check) has been known for the grace.
 * A request no slot can take is sent before its due time, unless every key of the provider
 * serving that model was held then (the spec sends it anyway and counts its answer as a
 * check). A restarted node is a new incarnation: a SIGKILL loses its claimed check.
 * Requests that ended within the grace after `since` raced the hold (in flight when it was
 * placed, or sent before its gossip arrived) and are counted apart, not as violations.
 */

/** One request the simulator logged (its control API's shape). */
export interface UpstreamRecord {
  /** Epoch ms when the request ended at the simulator. */
  at: number
  provider: string
  key_suffix: string
  /** The request's model, or the Azure deployment name. */
  model: string
  stream: boolean
  status: number
  aborted: boolean
}

/** One condition as one node listed it at one poll. */
export interface HoldObservation {
  /** When the poll answered (epoch ms). */
  observedAt: number
  nodeId: string
  /** Which start of the node this is (1 = first); a restart is a new incarnation. */
  incarnation: number
  provider: string
  keyId: string
  keyName: string | null
  model: string | null
  reason: string
  since: number
  nextCheckAt: number
  rung: number
  checks: number
}

/** What the rule needs to know of a configured key. */
export interface KeyFacts {
  provider: string
  id: string
  name: string
  /** The last four characters of the key's value, as the simulator logs it. */
  suffix: string | null
  /** The models the key serves; `*` = all. */
  models: string[]
  /** Model → upstream model name (Azure deployments, aliases). */
  upstreamNames: Record<string, string>
}

/** One hold from its placement to its release (or the end of the run). */
export interface HoldEpisode {
  id: string
  provider: string
  keyId: string
  keyName: string | null
  model: string | null
  reason: string
  since: number
  firstSeen: number
  lastSeen: number
  highestRung: number
  highestChecks: number
  observations: HoldObservation[]
}

/** A request to a held key that no check slot could take. */
export interface EarlyRequest {
  episode: string
  keyName: string | null
  model: string | null
  at: number
  status: number
  /** How long after `since` it ended. */
  afterSinceMs: number
  /** The earliest due time any node showed for the version in force then; null if none seen. */
  earliestDueAt: number | null
}

/** One episode's line in the report. */
export interface EpisodeSummary {
  keyName: string | null
  model: string | null
  reason: string
  since: number
  /** End of its window: the last poll that saw it, or the request that released it. */
  end: number
  highestRung: number
  highestChecks: number
  examined: number
  checks: number
  early: number
}

/** The verdict on traffic to held keys. */
export interface HeldTrafficVerdict {
  episodes: EpisodeSummary[]
  /** Requests to held keys inside the windows. */
  examined: number
  /** Of those, checks at or after a node's due time. */
  checks: number
  /** Of those, sent while every key serving the model was held (allowed by the spec). */
  everyKeyHeld: number
  /** Requests that ended within the grace after `since`: in flight when the hold was placed. */
  raced: number
  early: EarlyRequest[]
  /** Episodes whose key the config does not name (so their traffic could not be examined). */
  unknownKeys: string[]
}

/** How long a hold may take to reach the other nodes before their requests to its key count. */
export const PROPAGATION_GRACE_MS = 1_000

/** How far past the last poll that saw a hold the request that released it is looked for (polls are 0.5 s apart). */
export const RELEASE_LOOKAHEAD_MS = 2_000

/** Groups observations into episodes, oldest first. */
export function holdEpisodes(observations: readonly HoldObservation[]): HoldEpisode[] {
  const byId = new Map<string, HoldEpisode>()
  for (const observation of observations) {
    const id = JSON.stringify([observation.provider, observation.keyId, observation.model, observation.since])
    let episode = byId.get(id)
    if (!episode) {
      episode = {
        id,
        provider: observation.provider,
        keyId: observation.keyId,
        keyName: observation.keyName,
        model: observation.model,
        reason: observation.reason,
        since: observation.since,
        firstSeen: observation.observedAt,
        lastSeen: observation.observedAt,
        highestRung: observation.rung,
        highestChecks: observation.checks,
        observations: [],
      }
      byId.set(id, episode)
    }
    episode.observations.push(observation)
    episode.firstSeen = Math.min(episode.firstSeen, observation.observedAt)
    episode.lastSeen = Math.max(episode.lastSeen, observation.observedAt)
    episode.highestRung = Math.max(episode.highestRung, observation.rung)
    episode.highestChecks = Math.max(episode.highestChecks, observation.checks)
  }
  return [...byId.values()].sort((left, right) => left.since - right.since)
}

/** The name the upstream (and so the simulator's log) knows `model` by for this key. */
export function upstreamModel(key: KeyFacts, model: string): string {
  return key.upstreamNames[model] ?? model
}

function serves(key: KeyFacts, upstream: string): boolean {
  if (key.models.includes('*') || key.models.includes(upstream)) return true
  return Object.values(key.upstreamNames).includes(upstream)
}

interface Slot {
  due: number
  /** The slot may be used until this time (a newer version known for the grace), or forever. */
  until: number
  used: boolean
}

/** The check slots of an episode: one per node incarnation and hold version. */
function checkSlots(episode: HoldEpisode, graceMs: number): Slot[] {
  const newerKnownAt = (checks: number) => {
    let at = Infinity
    for (const observation of episode.observations) if (observation.checks > checks) at = Math.min(at, observation.observedAt)
    return at
  }
  const seen = new Map<string, Slot>()
  for (const observation of episode.observations) {
    const id = JSON.stringify([observation.nodeId, observation.incarnation, observation.checks, observation.nextCheckAt])
    if (!seen.has(id)) seen.set(id, { due: observation.nextCheckAt, until: newerKnownAt(observation.checks) + graceMs, used: false })
  }
  return [...seen.values()]
}

/** Takes the usable slot that expires first (the greedy choice that leaves the most for later requests). */
function takeSlot(slots: Slot[], at: number): Slot | null {
  let best: Slot | null = null
  for (const slot of slots) {
    if (slot.used || slot.due > at || at > slot.until) continue
    if (best === null || slot.until < best.until || (slot.until === best.until && slot.due < best.due)) best = slot
  }
  if (best) best.used = true
  return best
}

/** The earliest due time any node showed for the version in force at `at`. */
function earliestDue(episode: HoldEpisode, at: number): number | null {
  let version = -1
  for (const observation of episode.observations) if (observation.observedAt <= at) version = Math.max(version, observation.checks)
  if (version < 0) version = Math.min(...episode.observations.map((observation) => observation.checks))
  const dues = episode.observations.filter((observation) => observation.checks === version).map((observation) => observation.nextCheckAt)
  return dues.length > 0 ? Math.min(...dues) : null
}

/** Applies the "before its due time" rule (see the file comment) to every episode. */
export function judgeHeldTraffic(init: {
  observations: readonly HoldObservation[]
  records: readonly UpstreamRecord[]
  keys: readonly KeyFacts[]
  graceMs?: number
}): HeldTrafficVerdict {
  const graceMs = init.graceMs ?? PROPAGATION_GRACE_MS
  const episodes = holdEpisodes(init.observations)
  const keyById = new Map(init.keys.map((key) => [`${key.provider}\u0000${key.id}`, key]))
  const records = [...init.records].sort((left, right) => left.at - right.at)
  const verdict: HeldTrafficVerdict = { episodes: [], examined: 0, checks: 0, everyKeyHeld: 0, raced: 0, early: [], unknownKeys: [] }
  const windows = episodes.map((episode) => ({ episode, end: episode.lastSeen }))

  /** True when every key of `provider` serving `upstream` was held at `at`. */
  const everyKeyHeldAt = (provider: string, upstream: string, at: number): boolean => {
    const serving = init.keys.filter((key) => key.provider === provider && serves(key, upstream))
    if (serving.length === 0) return false
    return serving.every((key) =>
      windows.some(({ episode, end }) => episode.provider === provider && episode.keyId === key.id && episode.since <= at && at <= end && (episode.model === null || upstreamModel(key, episode.model) === upstream)),
    )
  }

  for (const window of windows) {
    const { episode } = window
    const key = keyById.get(`${episode.provider}\u0000${episode.keyId}`)
    if (!key || key.suffix === null) {
      verdict.unknownKeys.push(episode.keyName ?? episode.keyId)
      continue
    }
    const upstream = episode.model === null ? null : upstreamModel(key, episode.model)
    const toKey = records.filter((record) => record.provider === episode.provider && record.key_suffix === key.suffix && (upstream === null || record.model === upstream))
    // The first request the upstream served released the hold; what follows is not held traffic.
    // That check may end just after the last poll that saw the hold, so it is looked for a poll round beyond.
    // A request served within the grace was in flight when the hold began: it does not release it.
    const served = toKey.find((record) => record.status === 200 && record.at > episode.since + graceMs && record.at <= episode.lastSeen + RELEASE_LOOKAHEAD_MS)
    if (served) window.end = served.at
  }

  const flagged = new Set<UpstreamRecord>()
  for (const { episode, end } of windows) {
    const key = keyById.get(`${episode.provider}\u0000${episode.keyId}`)
    if (!key || key.suffix === null) continue
    const upstream = episode.model === null ? null : upstreamModel(key, episode.model)
    const slots = checkSlots(episode, graceMs)
    const summary: EpisodeSummary = { keyName: episode.keyName, model: episode.model, reason: episode.reason, since: episode.since, end, highestRung: episode.highestRung, highestChecks: episode.highestChecks, examined: 0, checks: 0, early: 0 }
    verdict.episodes.push(summary)
    for (const record of records) {
      if (record.provider !== episode.provider || record.key_suffix !== key.suffix) continue
      if (upstream !== null && record.model !== upstream) continue
      if (record.at <= episode.since || record.at > end) continue
      if (record.at <= episode.since + graceMs) {
        verdict.raced++
        continue
      }
      verdict.examined++
      summary.examined++
      if (takeSlot(slots, record.at)) {
        verdict.checks++
        summary.checks++
      } else if (everyKeyHeldAt(episode.provider, record.model, record.at)) {
        verdict.everyKeyHeld++
      } else {
        summary.early++
        // Two episodes of one target overlap only when nodes never merged their holds; count the request once.
        if (flagged.has(record)) continue
        flagged.add(record)
        verdict.early.push({
          episode: episode.id,
          keyName: episode.keyName,
          model: episode.model,
          at: record.at,
          status: record.status,
          afterSinceMs: record.at - episode.since,
          earliestDueAt: earliestDue(episode, record.at),
        })
      }
    }
  }
  return verdict
}
