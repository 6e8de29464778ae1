/**
 * Incidents: every node's episodes grouped into one incident per problem, however many nodes
 * saw it, each with the status of the reference ("Incidents"; adaptive-routing-overview.txt:
 * "do you need to do anything?"). Pure: episodes and node liveness in, incidents out, `now`
 * injected. Every node reads the same rows from Postgres, so every node answers the same.
 */
import { createHash } from 'node:crypto'
import type { RouteState } from '@switchboard/routing'
import { keyEntity, type Scope } from '../entities.ts'
import { worse } from '../tracker/episodes.ts'
import type { Action, Episode, Stamped } from '../tracker/types.ts'

/** Incident statuses (design.md). */
export type IncidentStatus = 'attention' | 'recovering' | 'mitigated' | 'waiting' | 'resolved' | 'unobserved'

/** An episode as stored: with the node that saw it. */
export type StoredEpisode = Stamped<Episode>

/** What history knows of a node: when it last reported, and whether it stopped. */
export interface NodeLiveness {
  region: string
  lastSeenAt: number
  stoppedAt: number | null
}

/** An incident, exactly the fields of design.md, plus the episodes behind it. */
export interface Incident {
  id: string
  entity: string
  scope: Scope
  provider: string
  models: string[]
  key_ids: string[]
  status: IncidentStatus
  worst_state: RouteState
  reasons: string[]
  opened_at: string
  closed_at: string | null
  duration_seconds: number
  nodes: string[]
  regions: string[]
  checks: number
  requests_failed: number
  pinned_kept_failed: number
  action: Action
  what_would_help?: string
}

/** Options of the grouping. */
export interface GroupOptions {
  now: number
  /** A node that has not reported for this long lost sight of its open episodes; default 3 min. */
  lostAfterMs?: number
  /** A recovering incident no request reached for this long is waiting for traffic; default 2 min. */
  waitingAfterMs?: number
  /** Names of keys, for what_would_help. */
  keyName?: (provider: string, keyId: string) => string | undefined
}

/** An incident with its episodes, for the detail view. */
export interface GroupedIncident {
  incident: Incident
  episodes: StoredEpisode[]
  /** Milliseconds of `opened_at` and `closed_at`, for sorting and windows. */
  openedMs: number
  closedMs: number | null
}

/** Episodes of one entity closer than this in time are one problem (a flap, or nodes seeing it seconds apart). */
export const JOIN_GAP_MS = 60_000

/** Groups episodes into incidents. */
export function groupIncidents(episodes: readonly StoredEpisode[], nodes: ReadonlyMap<string, NodeLiveness>, options: GroupOptions): GroupedIncident[] {
  const now = options.now
  const lostAfter = options.lostAfterMs ?? 180_000
  // An open episode of a node that stopped reporting ends where the node went quiet, lost.
  const effective = episodes.map((episode) => {
    if (episode.closedAt !== null) return { episode, end: episode.closedAt, lost: episode.lost }
    const node = nodes.get(episode.nodeId)
    const quietSince = node === undefined ? episode.updatedAt : node.stoppedAt ?? (now - node.lastSeenAt > lostAfter ? node.lastSeenAt : null)
    if (episode.lost || quietSince !== null) return { episode, end: Math.max(episode.updatedAt, quietSince ?? episode.updatedAt), lost: true }
    return { episode, end: null as number | null, lost: false }
  })
  // Union-find over episodes: same entity and overlapping (within the gap); a route's state
  // episode inside a direction or hold episode of its provider+model or key is part of that.
  const parent = effective.map((_, index) => index)
  const find = (index: number): number => {
    while (parent[index] !== index) index = parent[index] = parent[parent[index]!]!
    return index
  }
  const union = (a: number, b: number) => {
    const rootA = find(a)
    const rootB = find(b)
    if (rootA === rootB) return
    // The root is the episode whose entity names the incident: direction and hold episodes win over route state episodes.
    if (rank(effective[rootB]!.episode) > rank(effective[rootA]!.episode)) parent[rootA] = rootB
    else parent[rootB] = rootA
  }
  const overlaps = (a: (typeof effective)[number], b: (typeof effective)[number]) =>
    a.episode.openedAt <= (b.end ?? now) + JOIN_GAP_MS && b.episode.openedAt <= (a.end ?? now) + JOIN_GAP_MS
  const byEntity = new Map<string, number[]>()
  effective.forEach((item, index) => pushTo(byEntity, item.episode.entity, index))
  /** Sorted by opening: joins each episode of `list` to the running group while it overlaps the group's extent. */
  const joinRuns = (list: number[]) => {
    list.sort((a, b) => effective[a]!.episode.openedAt - effective[b]!.episode.openedAt)
    let groupEnd: number | null = null
    let groupStart = -1
    for (const index of list) {
      const item = effective[index]!
      if (groupStart >= 0 && item.episode.openedAt <= (groupEnd ?? now) + JOIN_GAP_MS) {
        union(groupStart, index)
        groupEnd = groupEnd === null || item.end === null ? null : Math.max(groupEnd, item.end)
      } else {
        groupStart = index
        groupEnd = item.end
      }
    }
  }
  for (const list of byEntity.values()) joinRuns(list)
  // Route state episodes folded into a direction or hold problem covering them.
  const covering = new Map<string, number[]>()
  effective.forEach((item, index) => {
    const episode = item.episode
    if (episode.scope === 'direction') pushTo(covering, `d:${episode.provider}:${episode.models[0]}`, index)
    if (episode.cause === 'hold') {
      if (episode.scope === 'key') pushTo(covering, `k:${episode.provider}:${episode.keyIds[0]}`, index)
      else pushTo(covering, `r:${episode.entity}`, index)
    }
  })
  effective.forEach((item, index) => {
    const episode = item.episode
    if (episode.scope !== 'route') return
    const model = episode.models[0]
    const keyId = episode.keyIds[0]
    const candidates = [...(covering.get(`k:${episode.provider}:${keyId}`) ?? []), ...(episode.cause === 'state' ? (covering.get(`d:${episode.provider}:${model}`) ?? []) : [])]
    if (episode.cause === 'state') candidates.push(...(covering.get(`r:${episode.entity}`) ?? []))
    for (const other of candidates) if (other !== index && overlaps(item, effective[other]!)) union(index, other)
  })
  // A key slow or failing on several models at once, with no hold or direction problem around it,
  // is one problem, the key's: its routes' own episodes (one per model) join (issue 36, item 11).
  // So are one key's holds on several models for the same reason at once (a key's rate limit
  // held model by model): one key, one problem.
  const alone = new Map<string, number[]>()
  effective.forEach((item, index) => {
    const episode = item.episode
    if (episode.scope !== 'route') return
    const root = effective[find(index)]!.episode
    if (episode.cause === 'state' && rank(root) === 1) pushTo(alone, `state\u0000${episode.provider}\u0000${episode.keyIds[0]}`, index)
    else if (episode.cause === 'hold' && root.scope === 'route' && root.cause === 'hold') pushTo(alone, `hold\u0000${episode.provider}\u0000${episode.keyIds[0]}\u0000${episode.reasons[0] ?? ''}`, index)
  })
  for (const list of alone.values()) if (list.length >= 2) joinRuns(list)
  const groups = new Map<number, number[]>()
  effective.forEach((_, index) => pushTo(groups, find(index), index))
  return [...groups.values()].map((members) => {
    // Members in a fixed order, and the primary chosen from them alone: the answer does not depend on the order rows came in.
    const ordered = members.map((index) => effective[index]!).sort((a, b) => compareEpisodes(a.episode, b.episode))
    const primary = ordered.reduce((best, item) => (rank(item.episode) > rank(best.episode) ? item : best)).episode
    return buildIncident(primary, ordered, options)
  })
}

/** Oldest first; then by node and id, so equal openings sort the same everywhere. */
function compareEpisodes(a: StoredEpisode, b: StoredEpisode): number {
  return a.openedAt - b.openedAt || compareText(a.nodeId, b.nodeId) || compareText(a.id, b.id)
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** Which episode names the incident: a key's, then a hold's or a direction's, then a route's state episode. */
function rank(episode: Episode): number {
  return episode.scope === 'key' ? 3 : episode.cause === 'hold' || episode.scope === 'direction' ? 2 : 1
}

/** Adds `value` to the list of `key`, made the first time. */
export function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key)
  if (list === undefined) map.set(key, [value])
  else list.push(value)
}

/** Actions from the mildest to the strongest: an incident names the strongest any of its episodes took. */
const ACTION_STRENGTH: readonly Action[] = ['reduced_traffic', 'moved_traffic', 'held']

/** One incident from its members, `members` already in `compareEpisodes` order. */
function buildIncident(
  primary: StoredEpisode,
  members: { episode: StoredEpisode; end: number | null; lost: boolean }[],
  options: GroupOptions,
): GroupedIncident {
  const now = options.now
  const waitingAfter = options.waitingAfterMs ?? 120_000
  const episodes = members.map((member) => member.episode)
  const openedMs = episodes[0]!.openedAt
  const live = members.filter((member) => member.end === null)
  const closedMs = live.length > 0 ? null : Math.max(...members.map((member) => member.end!))
  const sortedSet = (values: (episode: StoredEpisode) => readonly string[]) => [...new Set(episodes.flatMap(values))].sort()
  const sum = (count: (episode: StoredEpisode) => number) => episodes.reduce((total, episode) => total + count(episode), 0)
  const models = sortedSet((episode) => episode.models)
  // Each reason with when it was last seen: the incident leads with the latest evidence (issue 36, item 5).
  const reasonSeen = new Map<string, number>()
  for (const episode of episodes) {
    episode.reasons.forEach((reason, index) => {
      const last = index === episode.reasons.length - 1
      const seen = last ? (episode.reasonAt ?? episode.openedAt) : episode.openedAt
      if (seen > (reasonSeen.get(reason) ?? -Infinity)) reasonSeen.set(reason, seen)
    })
  }
  const worst = episodes.reduce<RouteState>((state, episode) => worse(state, episode.worstState), 'healthy')
  const action = ACTION_STRENGTH[Math.max(...episodes.map((episode) => ACTION_STRENGTH.indexOf(episode.action)))]!
  // Latest first; reasons seen at the same moment keep the order they were met in (the sort is stable).
  const reasons = [...reasonSeen.keys()].sort((a, b) => reasonSeen.get(b)! - reasonSeen.get(a)!)
  let status: Incident['status']
  let help: string | undefined
  // Closed: resolved when a node saw it close; unobserved when every node lost sight of it first.
  if (live.length === 0) status = members.every((member) => member.lost) ? 'unobserved' : 'resolved'
  else {
    help = whatWouldHelp(primary, live.map((member) => member.episode), models, options)
    if (help !== undefined) status = 'attention'
    else if (live.some((member) => member.episode.phase !== 'recovering')) status = 'mitigated'
    else {
      // Recovering on every node still watching it: unconfirmed when no request reached it lately.
      const lastTraffic = Math.max(...live.map((member) => Math.max(member.episode.lastRequestAt ?? 0, member.episode.recoveringSince ?? member.episode.openedAt)))
      status = now - lastTraffic >= waitingAfter ? 'waiting' : 'recovering'
    }
  }
  // Route episodes of one key on several models (joined above): the incident is the key's.
  const acrossModels = primary.scope === 'route' && models.length > 1
  const entity = acrossModels ? keyEntity(primary.provider, primary.keyIds[0] ?? '') : primary.entity
  const incident: Incident = {
    id: incidentId(entity, openedMs),
    entity,
    scope: acrossModels ? 'key' : primary.scope,
    provider: primary.provider,
    models,
    key_ids: sortedSet((episode) => episode.keyIds),
    status,
    worst_state: worst === 'healthy' ? 'degraded' : worst,
    reasons,
    opened_at: new Date(openedMs).toISOString(),
    closed_at: closedMs === null ? null : new Date(closedMs).toISOString(),
    duration_seconds: Math.max(0, Math.round(((closedMs ?? now) - openedMs) / 1000)),
    nodes: sortedSet((episode) => [episode.nodeId]),
    regions: sortedSet((episode) => [episode.region]),
    checks: sum((episode) => episode.checks),
    requests_failed: sum((episode) => episode.requestsFailed),
    pinned_kept_failed: sum((episode) => episode.pinnedKeptFailed),
    action,
  }
  if (help !== undefined) incident.what_would_help = help
  return { incident, episodes, openedMs, closedMs }
}

/**
 * Why an open incident needs a person, in plain words, or undefined when routing has it
 * (reference overview: a rejected key, a key out of quota, requests failing with no healthy
 * key or provider left, requests kept on a failing provider because redirecting was off).
 */
function whatWouldHelp(primary: StoredEpisode, live: readonly StoredEpisode[], models: readonly string[], options: GroupOptions): string | undefined {
  const modelList = models.join(', ')
  // Holds in force, each judged by its own latest evidence: a key a check proved valid (now only
  // rate limited, say) is no longer a key to replace (issue 36, item 5).
  const held = live.filter((episode) => episode.cause === 'hold' && episode.phase !== 'recovering')
  const keyId = primary.keyIds[0]
  const name = keyId === undefined ? undefined : (options.keyName?.(primary.provider, keyId) ?? keyId)
  const said = (episode: StoredEpisode | undefined) => (episode?.message ? ` (${primary.provider} said: "${episode.message}")` : '')
  const rejected = latestHeldFor(held, 'credential')
  if (rejected !== undefined) {
    return `Replace the key: ${primary.provider} rejects key ${name}${said(rejected)}. Save the right value for it; the edit releases the hold on every node and routing checks the new key with live traffic. If requests or a routing rule name this key directly, stop pinning it so routing can move them next time.`
  }
  const empty = latestHeldFor(held, 'quota')
  if (empty !== undefined) {
    return `Top up the account or raise the quota of key ${name} on ${primary.provider}${said(empty)}, or add another key that serves ${modelList || 'its models'}. Routing checks the key again on its own; Release key checks it straight away.`
  }
  // Counted only where another provider serving the model was healthy (routing says so per request, issue 36, item 4).
  // And only while the provider still fails: once it is recovering the setting would avoid nothing now (item 5).
  const pinned = live.reduce((sum, episode) => sum + (episode.phase === 'recovering' ? 0 : episode.pinnedKeptFailed), 0)
  if (pinned > 0) {
    return `Requests that name ${primary.provider} were kept on it while it failed, because re-routing failed providers is off. Turn on reroute_failed_directions (adaptive routing settings), or stop naming ${primary.provider} in the requests or routing rules that pin it.`
  }
  // Status follows the requests: some node's latest requests for the model failed with nothing left to serve them (issue 36, item 1).
  if (live.some(failingWithNoneLeft)) {
    return `Requests for ${modelList || 'its models'} are failing with no healthy key or provider left to send them to. Add a fallback provider or another key that serves the model.`
  }
  return undefined
}

/** The hold in force whose current reason (its latest evidence) is `reason`, the most recent first. */
function latestHeldFor(held: readonly StoredEpisode[], reason: string): StoredEpisode | undefined {
  let found: StoredEpisode | undefined
  for (const episode of held) {
    if (episode.reasons[episode.reasons.length - 1] !== reason) continue
    if (found === undefined || (episode.reasonAt ?? episode.updatedAt) > (found.reasonAt ?? found.updatedAt)) found = episode
  }
  return found
}

/** The node's requests for the episode's model were failing with nothing left, and nothing newer (a recovery) says otherwise. */
function failingWithNoneLeft(episode: StoredEpisode): boolean {
  const since = episode.noneLeftAt
  if (since == null) return false
  return episode.phase !== 'recovering' || (episode.recoveringSince ?? 0) <= since
}

/** A stable id: the same for the same problem whichever node answers. */
export function incidentId(entity: string, openedMs: number): string {
  return 'inc_' + createHash('sha256').update(`${entity}\u0000${openedMs}`).digest('hex').slice(0, 16)
}
