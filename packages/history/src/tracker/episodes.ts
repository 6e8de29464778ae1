/**
 * The episodes open on one node: opened, closed, abandoned, each with the fields a new
 * episode starts with; and the state arithmetic episodes and directions share.
 */
import type { RouteState } from '@switchboard/routing'
import { scopeOf } from '../entities.ts'
import type { Episode, TrackerOutput } from './types.ts'

/** Route states from best to worst: a state's rank is its index (the timeline's SQL ranks them the same). */
export const STATE_BY_RANK = ['healthy', 'recovering', 'degraded', 'failed'] as const satisfies readonly RouteState[]

const STATE_RANK = Object.fromEntries(STATE_BY_RANK.map((state, rank) => [state, rank])) as Record<RouteState, number>

/** The worse of two states. */
export const worse = (a: RouteState, b: RouteState): RouteState => (STATE_RANK[b] > STATE_RANK[a] ? b : a)

/** A direction's state from its keys' states: failed when every key failed (reference: "When every key is held"). */
export function directionState(states: readonly RouteState[]): RouteState {
  if (states.length === 0) return 'healthy'
  if (states.every((state) => state === 'failed')) return 'failed'
  if (states.some((state) => state === 'failed' || state === 'degraded')) return 'degraded'
  if (states.some((state) => state === 'recovering')) return 'recovering'
  return 'healthy'
}

/** Records `reason` as the episode's latest evidence (moved last, its time kept); true when that changed the episode. */
export function noteReason(episode: Episode, reason: string, at: number): boolean {
  const reasons = episode.reasons
  if (reasons[reasons.length - 1] === reason && episode.reasonAt === at) return false
  const index = reasons.indexOf(reason)
  if (index >= 0) reasons.splice(index, 1)
  reasons.push(reason)
  episode.reasonAt = at
  return true
}

/** What names a new episode. */
type EpisodeName = Pick<Episode, 'id' | 'entity' | 'provider' | 'models' | 'keyIds' | 'cause' | 'openedAt'>

/** A new episode: open, nothing seen yet but its opening. */
export function newEpisode(name: EpisodeName): Episode {
  return {
    ...name,
    scope: scopeOf(name.entity),
    phase: 'failed',
    closedAt: null,
    updatedAt: name.openedAt,
    worstState: 'degraded',
    reasons: [],
    action: 'reduced_traffic',
    checks: 0,
    checkOutcomes: {},
    requestsFailed: 0,
    pinnedKeptFailed: 0,
    failedNoAlternative: 0,
    noneLeftAt: null,
    sawRefusal: false,
    message: null,
    lastRequestAt: null,
    recoveringSince: null,
    releasedBy: null,
    lost: false,
  }
}

/** Failed requests recorded as events per episode, at most (the counts keep the rest). */
const FAILED_REQUEST_EVENTS_PER_EPISODE = 50

/**
 * One node's open episodes by entity, one per entity at most: almost always none, and requests then
 * touch no episode. `values()` does not copy them (the caller changes none of the set while iterating).
 */
export class OpenEpisodes extends Map<string, Episode> {
  private readonly failedEvents = new Map<string, number>()
  private sequence = 0

  constructor(private readonly nodeId: string) {
    super()
  }

  /** Opens an episode on `entity` (ids unique per node). */
  start(entity: string, cause: Episode['cause'], at: number, provider: string, model: string | null, keyId: string | null): Episode {
    const episode = newEpisode({
      id: `${this.nodeId}:${at.toString(36)}:${(this.sequence++).toString(36)}`,
      entity,
      provider,
      models: model === null ? [] : [model],
      keyIds: keyId === null ? [] : [keyId],
      cause,
      openedAt: at,
    })
    this.set(entity, episode)
    return episode
  }

  close(episode: Episode, at: number, out: TrackerOutput): void {
    episode.phase = 'closed'
    episode.closedAt = at
    episode.updatedAt = at
    this.delete(episode.entity)
    this.failedEvents.delete(episode.id)
    if (!out.episodes.includes(episode)) out.episodes.push(episode)
  }

  /** True while the episode may record one more failed request as an event (counted). */
  takeFailedEvent(episode: Episode): boolean {
    const recorded = this.failedEvents.get(episode.id) ?? 0
    if (recorded >= FAILED_REQUEST_EVENTS_PER_EPISODE) return false
    this.failedEvents.set(episode.id, recorded + 1)
    return true
  }

  /** Every open episode, marked lost (the node is stopping before they closed). */
  abandon(at: number): Episode[] {
    const episodes = [...this.values()]
    for (const episode of episodes) {
      episode.lost = true
      episode.updatedAt = at
    }
    this.clear()
    return episodes
  }
}
