/**
 * Held keys as history follows them: a hold placed opens (or takes over) the entity's
 * episode, checks are counted, a release by check leaves it recovering and a release by an
 * edit or delete closes it (reference: "Releasing held keys").
 */
import type { HoldEntry } from '@switchboard/routing'
import { holdEntity } from '../entities.ts'
import { noteReason, type OpenEpisodes } from './episodes.ts'
import type { ReleaseBy, TrackerOutput } from './types.ts'

/** A hold entry as the fleet replicates it (the fields history reads). */
export type HoldView = Pick<HoldEntry, 'provider' | 'keyId' | 'model' | 'state' | 'reason' | 'message' | 'since' | 'rung' | 'checks' | 'baseWaitMs' | 'releaseCause'>

/** Counts a check this node sent on the entity's episode and in the minute's counts. */
export type AddCheck = (entity: string, provider: string, model: string | null, outcome: string, at: number, out: TrackerOutput) => void

const RELEASE_BY: Record<string, ReleaseBy> = { served: 'check', settled: 'check', operator: 'operator', key_edit: 'edit', deleted: 'delete' }

/** What one hold entry's change (from `previous`, the entry as last seen) means for history. */
export function followHold(previous: HoldView | undefined, entry: HoldView, origin: 'local' | 'peer', at: number, episodes: OpenEpisodes, addCheck: AddCheck): TrackerOutput {
  const entity = holdEntity(entry.provider, entry.keyId, entry.model)
  const base = { entity, provider: entry.provider, model: entry.model, keyId: entry.keyId }
  const out: TrackerOutput = { events: [], episodes: [] }
  const wasHeld = previous !== undefined && previous.state === 'held'
  if (entry.state === 'held' && (!wasHeld || previous.since !== entry.since)) {
    out.events.push({ at, kind: 'hold:placed', ...base, detail: { reason: entry.reason, message: entry.message, rung: entry.rung, wait_ms: entry.baseWaitMs, origin } })
    let episode = episodes.get(entity)
    if (episode === undefined || episode.cause !== 'hold') {
      if (episode !== undefined) episodes.close(episode, at, out)
      episode = episodes.start(entity, 'hold', at, entry.provider, entry.model, entry.keyId)
      episode.sawRefusal = origin === 'local'
      episode.action = 'held'
    } else if (origin === 'local') episode.sawRefusal = true
    episode.phase = 'held'
    episode.worstState = 'failed'
    // The hold as it stands now is the latest evidence: its reason leads, its message is quoted (issue 36, item 5).
    episode.message = entry.message
    episode.recoveringSince = null
    noteReason(episode, entry.reason, at)
    episode.updatedAt = at
    out.episodes.push(episode)
  } else if (entry.state === 'held' && wasHeld && entry.checks > previous.checks) {
    const outcome = entry.rung > previous.rung || entry.reason !== previous.reason ? 'refused_again' : 'inconclusive'
    // A peer's check is recorded by that peer; here only the new rung matters.
    if (origin === 'local') {
      out.events.push({ at, kind: 'hold:checked', ...base, detail: { outcome, reason: entry.reason, rung: entry.rung, message: entry.message } })
      addCheck(entity, entry.provider, entry.model, outcome, at, out)
    }
    const episode = episodes.get(entity)
    if (episode !== undefined) {
      episode.message = entry.message
      noteReason(episode, entry.reason, at)
      episode.updatedAt = at
      if (!out.episodes.includes(episode)) out.episodes.push(episode)
    }
  } else if (entry.state === 'released' && wasHeld) {
    const by = RELEASE_BY[entry.releaseCause ?? ''] ?? 'check'
    out.events.push({ at, kind: 'hold:released', ...base, detail: { by, cause: entry.releaseCause, reason: previous.reason, origin } })
    if (by === 'check' && origin === 'local') addCheck(entity, entry.provider, entry.model, 'served', at, out)
    const episode = episodes.get(entity)
    if (episode !== undefined) {
      episode.releasedBy = by
      // The key as it was is gone after an edit or delete: that problem is over (reference: "Releasing held keys").
      if (by === 'edit' || by === 'delete') episodes.close(episode, at, out)
      else {
        episode.phase = 'recovering'
        episode.recoveringSince = at
        episode.updatedAt = at
        out.episodes.push(episode)
      }
    }
  }
  return out
}
